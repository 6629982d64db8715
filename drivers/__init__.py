"""Device drivers: one module per protocol, clients only (never imports bench.sim)."""
import importlib
import threading

from drivers.base import Driver

_IMPORTING = threading.Lock()


def driver_class(name: str) -> type[Driver]:
    """The driver class of module `drivers.<name>` (its module-level `DRIVER`). Imports are
    serialised: device threads importing client libraries at once (kubernetes and redfish both
    pull in requests) can otherwise meet a partially initialised module."""
    with _IMPORTING:
        module = importlib.import_module(f"drivers.{name}")
    return module.DRIVER
