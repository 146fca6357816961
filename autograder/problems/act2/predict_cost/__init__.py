"""Predict, then measure: the counts, the roofline time and the limit, graded exactly on any machine."""
