"""The simulated rack: clock models with ground truth, and one emulator per protocol on loopback.

Never imports `drivers/`: an emulator must not share the client's code.
"""
from pathlib import Path

DEFAULT_RACK = Path(__file__).with_name("default_rack.toml")   # `rackclock run`/`sim` without --rack
