"""Act 5, judged answer: the fastest 3-D parallel plan that fits."""
