"""Device drivers: one module per protocol, clients only (never imports bench.sim)."""
import importlib

from drivers.base import Driver


def driver_class(name: str) -> type[Driver]:
    """The driver class of module `drivers.<name>` (its module-level `DRIVER`)."""
    module = importlib.import_module(f"drivers.{name}")
    return module.DRIVER
