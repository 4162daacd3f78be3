"""steps.sparql (face written below)."""
