"""Admission: whether the bench can probe a rack at the rates it asks, before it starts.

The cost of a read per driver (CPU ms of the bench, and of the simulator when the rack is served
on this host, log polls and stimuli included at their default pace) comes from a calibration
file measured on this machine class (`benchmarks/scale.py --calibrate` writes it). A rack needs
sum(rate_hz x burst x cost) cores; the bench has its usable cores x HEADROOM. More than that is
refused with the numbers, or, when the user allows it (`--fit-rates`), every rate is scaled down
by the same factor, said in the manifest and the closing table.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from bench.errors import RackclockError

COST_FILE = Path(__file__).with_name("exchange_cost.json")
HEADROOM = 0.8                 # share of the usable cores the probing may plan to use
MIN_RATE_HZ = 0.01             # the rack file's own lower limit


class Refused(RackclockError):
    """The rack needs more than the bench can do at the requested rates."""

    def __init__(self, admission: Admission):
        super().__init__(admission.message())
        self.admission = admission


@dataclass(frozen=True)
class Admission:
    need_cores: float
    capacity_cores: float
    cores: int
    calibration: str
    drivers: dict = field(default_factory=dict)  # driver -> devices, reads_per_s, ms_per_read...
    fit_factor: float | None = None              # rates scaled by this (--fit-rates)

    @property
    def fits(self) -> bool:
        return self.need_cores <= self.capacity_cores

    def as_dict(self) -> dict:
        return {**asdict(self), "fits": self.fits}

    def message(self) -> str:
        parts = ", ".join(f"{k}: {v['devices']} devices x {v['reads_per_s']:g} reads/s x "
                          f"{v['ms_per_read']:.3g} ms" + ("" if v["calibrated"] else " (assumed)")
                          for k, v in sorted(self.drivers.items()))
        return (f"the rack needs {self.need_cores:.2f} cores of probing at its rates, the bench has "
                f"{self.capacity_cores:.2f} ({self.cores} cores x {HEADROOM:g}); {parts} "
                f"(calibration {self.calibration}). Lower rate_hz, split the rack, or run with "
                f"--fit-rates (rates x {min(1.0, self.capacity_cores / self.need_cores):.2f})")


def load_costs(path: Path | None = None) -> tuple[dict, str]:
    path = Path(path or os.environ.get("RACKCLOCK_CALIBRATION") or COST_FILE)
    data = json.loads(path.read_text())
    return data["drivers"], f"{path.name} ({data.get('measured', '?')})"


def assess(devices, burst: int, simulated: bool, cores: int | None = None,
           calibration: Path | None = None) -> Admission:
    """The rack's need against the bench's capacity. A driver the calibration lacks is assumed
    to cost as much as the dearest one it has (said so)."""
    costs, source = load_costs(calibration)
    dearest = max(c["bench_ms_per_read"] + (c["sim_ms_per_read"] if simulated else 0.0)
                  for c in costs.values())
    cores = cores or len(os.sched_getaffinity(0))
    drivers: dict[str, dict] = {}
    need = 0.0
    for d in devices:
        c = costs.get(d.driver)
        ms = dearest if c is None else \
            c["bench_ms_per_read"] + (c["sim_ms_per_read"] if simulated else 0.0)
        reads = d.rate_hz * max(1, burst)
        need += reads * ms / 1000
        x = drivers.setdefault(d.driver, {"devices": 0, "reads_per_s": 0.0, "ms_per_read": ms,
                                          "calibrated": c is not None})
        x["devices"] += 1
        x["reads_per_s"] = round(x["reads_per_s"] + reads, 3)
    return Admission(round(need, 3), round(cores * HEADROOM, 3), cores, source, drivers)


def fit_rates(rack, adm: Admission):
    """The rack with every rate scaled by capacity / need, and the admission saying so."""
    factor = min(1.0, adm.capacity_cores / adm.need_cores) if adm.need_cores else 1.0
    devices = tuple(replace(d, rate_hz=max(MIN_RATE_HZ, d.rate_hz * factor))
                    for d in rack.devices)
    return replace(rack, devices=devices), replace(adm, fit_factor=round(factor, 4),
                                                   need_cores=round(adm.need_cores * factor, 3))
