"""Experiment scripts, one per file, runnable as `rackclock run NAME` or `python experiments/NAME.py`."""
