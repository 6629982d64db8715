"""rackclock: a hardware-in-the-loop timing bench for AI racks."""

__version__ = "0.1.0"
