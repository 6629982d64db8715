"""The one root of rackclock's own exceptions.

Every exception class the bench and its drivers define sits under `RackclockError` and keeps its
built-in base (`class InventoryError(RackclockError, ValueError)`), so a caller may catch either
the whole bench's errors or the built-in kind it always caught. Base layer: imports nothing of
bench, so every layer (and drivers/) may import it.
"""
from __future__ import annotations


class RackclockError(Exception):
    """Root of every exception class defined in bench/ and drivers/."""
