"""Metric families: one module per family, each a set of pure functions."""
