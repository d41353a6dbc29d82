"""GPU host tooling over matrix.gpu: kernel timings (`bench`, `benchtable`), sglang source mutations run as a table
(`mutate`, `mutation_table`) and the one-process smoke run (`smoke`)."""
