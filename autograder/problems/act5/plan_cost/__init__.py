"""Act 5, exact answer: a parallel plan's memory, bubble and step time."""
