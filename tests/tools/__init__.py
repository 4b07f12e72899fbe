"""The package as a whole: the CLI, docs and notebooks, fuzzing, hostile input, the layers rule, resources."""
