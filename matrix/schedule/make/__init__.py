"""GNU make: the recipe a `make TARGET` runs, read from the Makefile."""
