"""Act 0, exercise 1: vector add in Triton."""
