"""`rackclock watch` on the simulated rack, scraped by a real Prometheus server: a step injected
mid-run (the simulator's fault control) appears as a break in the scraped series, fires the
example rules' break alert in that server, and writes one alert line in the journal; the day folders roll
and `summarize`/`compare` read them; the mapping service answers a stamp of a closed day with the interval
`rackclock timeline` gives."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import urllib.parse
from datetime import UTC, datetime
from pathlib import Path

import pytest
from racks import sim_rack_text
from watch_helpers import ROOT, get_json, start_watch, state, stop_watch, until

from bench.model.rundata import load_run
from bench.ports import free_port
from bench.sim.faults import send_fault

pytestmark = pytest.mark.slow
PROMETHEUS = shutil.which("prometheus")


def prometheus(tmp: Path, target: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    cfg = tmp / "prometheus.yml"
    rules = ROOT / "deploy" / "prometheus" / "rackclock.rules.yml"
    cfg.write_text(f"global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
                   f"  evaluation_interval: 1s\nrule_files:\n  - {rules}\n"
                   f"scrape_configs:\n  - job_name: rackclock\n"
                   f"    static_configs:\n      - targets: ['{target}']\n")
    proc = subprocess.Popen([PROMETHEUS, f"--config.file={cfg}",
                             f"--storage.tsdb.path={tmp / 'tsdb'}",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, f"http://127.0.0.1:{port}"


def query(prom: str, expr: str) -> list:
    got = get_json(f"{prom}/api/v1/query?{urllib.parse.urlencode({'query': expr})}")
    return (got or {}).get("data", {}).get("result", []) if isinstance(got, dict) else []


def iso(ns: int) -> str:
    t = datetime.fromtimestamp(ns // 10**9, UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + f".{ns % 10**9 // 10**6:03d}Z"


@pytest.mark.skipif(PROMETHEUS is None, reason="needs Debian's prometheus")
def test_watch_scraped_step_break_roll_and_map(tmp_path):
    rack = tmp_path / "rack.toml"
    rack.write_text(sim_rack_text(["bmc-2", "cdu-1"]))
    out = tmp_path / "out"
    proc = start_watch(out, "--rack", str(rack), "--rate", "2", "--fit-every", "1s",
                       "--roll-every", "20s")
    prom = None
    try:
        st = until(lambda: (s := state(out)) and s.get("url") and s, 90, "watch.json", proc)
        url = st["url"]
        prom, prom_url = prometheus(tmp_path, url.removeprefix("http://"))
        until(lambda: any(float(r["value"][1]) >= 10 for r in query(
            prom_url, 'rackclock_clock_reads_total{device="bmc-2"}')), 120,
            "scraped reads of bmc-2", proc)
        assert not query(prom_url, 'rackclock_clock_breaks_total{device="bmc-2"} > 0')
        send_fault(out / "watch-sim", "bmc-2", "step", size_s=3.0)
        got = until(lambda: query(prom_url, 'rackclock_clock_breaks_total{device="bmc-2"} > 0'),
                    120, "a scraped break of bmc-2", proc)
        assert got[0]["metric"]["clock"] == "datetime"
        # the example rules, loaded by the same server, fire on it
        firing = until(lambda: [a for a in (get_json(f"{prom_url}/api/v1/alerts") or {}).get(
            "data", {}).get("alerts", []) if a["labels"]["alertname"] == "RackclockClockBreak"
            and a["state"] == "firing"], 60, "the break alert firing", proc)
        assert firing[0]["labels"]["device"] == "bmc-2"
        assert query(prom_url, 'rackclock_clock_offset_status{device="cdu-1",status="proven"}')
        # a closed day: the mapping answers its stamps as the timeline does
        until(lambda: (s := state(out)) and s["closed"], 90, "a closed day folder", proc)
        day = Path(state(out)["closed"][0])
        _map_as_timeline(day, url, tmp_path)
        # the metrics endpoint also speaks OpenMetrics to a scraper that asks for it
        import urllib.request
        req = urllib.request.Request(f"{url}/metrics",
                                     headers={"Accept": "application/openmetrics-text"})
        with urllib.request.urlopen(req, timeout=30) as r:
            assert "openmetrics" in r.headers["Content-Type"]
            assert r.read().decode().rstrip().endswith("# EOF")
    finally:
        if prom is not None:
            prom.terminate()
            prom.wait(30)
        text = stop_watch(proc)
    assert proc.returncode == 0, text
    days = sorted(p for p in out.iterdir() if p.name.endswith("-watch") or "-watch-" in p.name)
    assert len(days) >= 2
    alerts = []
    for d in days:
        run = load_run(d)
        assert run.summary.devices, d             # every day summarised
        alerts += [e for e in run.events() if e.kind == "alert_break" and e.device == "bmc-2"]
    assert len(alerts) == 1, alerts               # once per event, whatever the refits
    assert load_run(days[-1]).manifest.status == "interrupted"
    assert load_run(days[-1]).manifest.raw["stopped_by"] == "SIGTERM"
    for cmd in (["summarize", str(days[0])], ["compare", str(days[0]), str(days[1])]):
        r = subprocess.run([sys.executable, "-m", "bench.cli", *cmd], cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
        # any verdict (PASS 0, REGRESSED 1, UNDECIDED 3: bench.model.outcomes), never an input
        # error (2) or a traceback: a day folder reads as a run folder
        assert r.returncode in (0, 1, 3) and "Traceback" not in r.stderr, r.stderr


def _map_as_timeline(day: Path, url: str, tmp: Path) -> None:
    run = load_run(day)
    s, e, v, q = run.clock_reads("bmc-2", "datetime")
    stamp = iso(int(v[len(v) // 2]) + 400_000_000)
    log = tmp / "bmc2.log"
    log.write_text(f"{stamp} test line\n")
    r = subprocess.run([sys.executable, "-m", "bench.cli", "timeline", str(day),
                        f"bmc-2:datetime={log},format=iso8601"], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    tl = json.loads((day / "timeline.json").read_text())
    entry = next(x for x in tl["entries"] if x.get("raw") == stamp)
    got = get_json(f"{url}/v1/map?" + urllib.parse.urlencode(
        {"device": "bmc-2", "clock": "datetime", "stamp": stamp}))
    assert got["source"] == str(day), got
    assert (got["lo_ns"], got["hi_ns"]) == (entry["lo_ns"], entry["hi_ns"])
    assert got["status"] == entry["status"]
    batch = get_json(f"{url}/v1/map", json.dumps([
        {"device": "bmc-2", "clock": "datetime", "stamp": stamp},
        {"device": "nope", "clock": "datetime", "stamp": stamp}]).encode())
    assert batch[0]["lo_ns"] == entry["lo_ns"] and "error" in batch[1]
    # the command-line twin, from the day folder alone
    r = subprocess.run([sys.executable, "-m", "bench.cli", "map", str(day), "--device", "bmc-2",
                        "--clock", "datetime", "--stamp", stamp], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["hi_ns"] == entry["hi_ns"]
    r = subprocess.run([sys.executable, "-m", "bench.cli", "map", "--url", url, "--device",
                        "bmc-2", "--clock", "datetime", "--stamp", stamp], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["lo_ns"] == entry["lo_ns"]
    _enriched_log_record(url, stamp, entry)


def _enriched_log_record(url: str, stamp: str, entry: dict) -> None:
    """docs/watch/enrich_logs.py: a logging filter puts the interval on the record."""
    import importlib.util
    import logging
    spec = importlib.util.spec_from_file_location("enrich_logs",
                                                  ROOT / "docs" / "watch" / "enrich_logs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record)
    log = logging.getLogger("test-watch-enrich")
    log.propagate = False
    log.addHandler(Keep())
    log.addFilter(mod.ReferenceTime(url, device="bmc-2", clock="datetime"))
    log.warning("fan failure", extra={"device_stamp": stamp})
    log.warning("no stamp")
    log.warning("bad stamp", extra={"device_stamp": "yesterday"})
    assert (records[0].ref_lo_ns, records[0].ref_hi_ns) == (entry["lo_ns"], entry["hi_ns"])
    assert not hasattr(records[1], "ref_lo_ns")
    assert records[2].ref_lo_ns is None and records[2].ref_status.startswith("error: stamp")
