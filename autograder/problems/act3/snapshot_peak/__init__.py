"""Act 3, exact answer: the peak of allocated memory, and what is live at it, read from a memory snapshot."""
