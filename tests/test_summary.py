"""summary.json from samples: a wrapping uptime counter is unwrapped (a wrap is no break), and
its bounds hold the truth; latencies are bounded by causality."""
import numpy as np

from bench.model.rundata import load_run
from bench.model.store import RunStore
from bench.model.summary import summarize_run
from bench.sim.clock_model import ClockModel, ClockParams

T0 = 1_795_000_000_000_000_000
Q = 10_000_000                     # sysUpTime: centiseconds
MOD = 2**32 * Q


def test_wrapping_counter_is_unwrapped_not_split(tmp_path):
    model = ClockModel(ClockParams(counter=True, resolution_s=0.01, wrap_ticks=2**32,
                                   uptime_s=2**32 * 0.01 - 20, drift_ppm=-30), T0, seed=2)
    store = RunStore(tmp_path, "run")
    w = store.samples("pdu-2")
    rng = np.random.default_rng(5)
    t = T0
    for _ in range(120):                      # 60 s at 2 Hz, the wrap 20 s in
        t += int(rng.uniform(0.25, 0.75) * 1e9)
        s, e = t, t + int(rng.uniform(0.5, 3) * 1e6)
        w.write("read", "sysuptime", s, e, model.read_ns(int(rng.integers(s, e + 1))), Q,
                "socket", "ok", "")
    w.close()
    store.write_manifest({"devices": {"pdu-2": {"plane": "pdu", "clocks": [
        {"name": "sysuptime", "resolution_ns": Q, "counter": True, "modulus_ns": MOD}]}}})
    store.close()
    run = load_run(tmp_path / "run")
    truth = {"devices": {"pdu-2": {"clocks": {"sysuptime": model.truth(range(T0, t, 10**9))}}}}
    c = summarize_run(run.path, run.manifest, truth)["devices"]["pdu-2"]["clocks"]["sysuptime"]
    assert len(c["wraps"]) == 1 and c["breaks"] == []
    (seg,) = c["segments"]
    assert seg["truth"]["offset_in"] and seg["truth"]["drift_in"]
    wrap_at = next(b["t_ns"] for b in model.breaks() if b["kind"] == "wrap")
    assert c["wraps"][0]["after_ns"] <= wrap_at <= c["wraps"][0]["before_ns"]


def test_truth_offset_after_a_reboot_between_grid_points():
    """A reboot (a fault triggered at any instant) between the truth grid's points: the truth at
    an instant after it comes from the grid's side of the reboot it is on, not the nearest point."""
    from bench.model.summary import _truth_offset_at
    ns = 1_000_000_000
    model = ClockModel(ClockParams(counter=True, resolution_s=0.01, wrap_ticks=2**32,
                                   uptime_s=1000.0), T0, seed=1)
    model.add_reboot(T0 + int(5.4 * ns))
    truth = model.truth(range(T0, T0 + 10 * ns + 1, ns))
    for t in (T0 + int(5.45 * ns), T0 + int(5.3 * ns), T0 + 7 * ns):
        assert _truth_offset_at(truth, t) == model.offset_ns(t)
