"""Predict the traffic, then check it against Nsight Compute: sectors and bytes of Act 1's strided read and transposes."""
