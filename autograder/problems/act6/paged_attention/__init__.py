"""Act 6: the paged-attention decode kernel (spec.toml, reference.py)."""
