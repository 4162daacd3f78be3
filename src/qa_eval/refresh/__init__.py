"""refresh (face written below)."""
