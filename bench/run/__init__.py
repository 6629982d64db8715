"""Running an experiment: the bench, the per-device runner, the experiment API."""
