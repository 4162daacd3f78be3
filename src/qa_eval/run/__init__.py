"""run (face written below)."""
