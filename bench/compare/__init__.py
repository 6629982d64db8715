"""Two runs (or many) side by side: measures, tolerances, verdicts."""
