"""Act 6, exact answer: The least time of one decode step, and what bounds it."""
