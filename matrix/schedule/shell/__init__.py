"""Shell scripts read with a real parser (tree-sitter-bash): their simple commands, words and conditions."""
