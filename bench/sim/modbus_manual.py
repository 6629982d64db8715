"""The emulated CDU's reading of its manual: the register-map TOML files in drivers/maps/cooling/.

The emulator reads those files by path, as a device's documentation, and never imports the
driver's loader (the two must not share code, or both could be wrong the same way). This is a
deliberately small, separate reading: plain dicts, the few defaults the files rely on.
"""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

MAP_DIR = Path(__file__).resolve().parents[2] / "drivers" / "maps" / "cooling"

FIELD_COUNT = {"int16": 1, "uint16": 1, "int32": 2, "uint32": 2, "float32": 2}


def manual_path(name: str) -> Path:
    return Path(name) if name.endswith(".toml") else MAP_DIR / f"{name}.toml"


def read_manual(name: str) -> dict[str, Any]:
    """The map named by the inventory's `map` key, as a dict (FileNotFoundError if absent)."""
    return tomllib.loads(manual_path(name).read_text())


def spans(manual: dict[str, Any]) -> list[tuple[str, str, int, int, bool]]:
    """Every mapped block as (what, table, address, count, writable)."""
    out: list[tuple[str, str, int, int, bool]] = []
    serial = manual.get("identity", {}).get("serial", {})
    if "address" in serial:
        out.append(("serial", serial["table"], serial["address"], serial["count"], False))
    rtc = manual["rtc"]
    out.append(("rtc", rtc["table"], rtc["address"],
                len(rtc["fields"]) if rtc["encoding"] == "fields" else 2, False))
    for name, s in manual.get("sensors", {}).items():
        out.append((f"sensor:{name}", s["table"], s["address"], FIELD_COUNT[s["type"]], False))
    alarm = manual.get("test_alarm")
    if alarm:
        out.append(("test_alarm", alarm["table"], alarm["address"], 1, True))
    log = manual.get("alarm_log")
    if log and log["layout"] == "ring":
        out.append(("log_index", log["table"], log["index_address"], 1, False))
        out.append(("log_ring", log["table"], log["base_address"],
                    log["entries"] * len(log["entry_fields"]), False))
    elif log:
        out.append(("log_count", log["table"], log["count_address"], 1, False))
        out.append(("log_select", log["table"], log["select_address"], 1, True))
        out.append(("log_window", log["table"], log["window_address"], len(log["window_fields"]),
                    False))
    return out
