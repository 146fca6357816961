"""Act 6, exact answer: Speculative decoding's expected speedup."""
