"""Step comparison: one comparator per step kind, and the matching of reference groups."""
