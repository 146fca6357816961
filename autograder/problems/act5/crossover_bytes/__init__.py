"""Act 5, exact answer: Where the ring overtakes the tree."""
