"""Act 7, exact answer: int4 group-wise asymmetric quantisation, packed."""
