"""judge (face written below)."""
