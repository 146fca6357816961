"""Act 7, exact answer: int8 dequantisation."""
