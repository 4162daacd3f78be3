"""compare (face written below)."""
