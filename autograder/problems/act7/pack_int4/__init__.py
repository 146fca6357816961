"""Act 7, exact answer: Two int4 values per byte."""
