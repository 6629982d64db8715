"""The run folder as records (manifest, summary, truth, events: the `*_records` modules), the
summary and verdicts made from samples, and the timeline builder (the logs it reads: bench/logs/)."""
