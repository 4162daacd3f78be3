"""judge.cache (face written below)."""
