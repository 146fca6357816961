"""Act 4: the online softmax, a softmax-weighted sum over long rows in one pass, in Triton."""
