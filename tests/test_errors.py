"""Every exception class defined in bench/ and drivers/ sits under the one root, RackclockError,
and keeps its built-in base. Found by importing every module, so a new class without the root
fails here."""
from __future__ import annotations

import importlib
import inspect
import pkgutil

import bench
import drivers
from bench.errors import RackclockError


def _modules():
    for pkg in (bench, drivers):
        yield pkg.__name__
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            yield info.name


def exception_classes() -> dict[str, type]:
    found = {}
    for name in _modules():
        mod = importlib.import_module(name)
        for cls_name, cls in inspect.getmembers(mod, inspect.isclass):
            if issubclass(cls, BaseException) and cls.__module__ == name:
                found[f"{name}.{cls_name}"] = cls
    return found


def test_every_exception_class_is_a_rackclock_error():
    found = exception_classes()
    assert len(found) >= 14, sorted(found)          # the walk did find the modules' classes
    outside = sorted(n for n, c in found.items() if not issubclass(c, RackclockError))
    assert outside == [], f"exception classes not under RackclockError: {outside}"


def test_the_builtin_bases_are_kept():
    import aiohttp

    from bench.config.inventory import InventoryError
    from bench.model.store import DiskFull
    from bench.reference.clock import ReferenceRefused
    from bench.reference.phc import PhcError
    from drivers.base import DeviceError, StimulusRefused
    from drivers.redfish_bmc import BodyTooLarge

    assert issubclass(InventoryError, ValueError) and issubclass(DiskFull, OSError)
    assert issubclass(PhcError, OSError) and issubclass(ReferenceRefused, RuntimeError)
    assert issubclass(BodyTooLarge, aiohttp.ClientPayloadError)
    assert issubclass(StimulusRefused, DeviceError)
    err = StimulusRefused("pdu-1", "not allowed")
    assert isinstance(err, RackclockError) and err.kind == "refused"


def test_a_class_without_the_root_is_found(monkeypatch):
    """The walk is not vacuous: a stray class in a bench module is reported."""
    import bench.units as units

    class Stray(ValueError):
        pass
    Stray.__module__ = "bench.units"
    monkeypatch.setattr(units, "Stray", Stray, raising=False)
    found = exception_classes()
    assert "bench.units.Stray" in found and not issubclass(found["bench.units.Stray"], RackclockError)
