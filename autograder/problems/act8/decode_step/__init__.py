"""Act 8: the whole decode step of the tiny transformer in one persistent Triton launch."""
