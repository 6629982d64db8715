"""The run folder and the rack file as records: inventory, samples, summary, manifest."""
