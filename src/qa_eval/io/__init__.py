"""io (face written below)."""
