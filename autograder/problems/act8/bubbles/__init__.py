"""Act 8, exact answer: the bubbles of an op-by-op decode step, read from a profiler trace."""
