"""Act 5, exact answer: Ring and tree all-reduce in the alpha-beta model."""
