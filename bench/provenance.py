"""What a run records about itself when it starts: versions, git revision, host."""
from __future__ import annotations

import platform
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import bench

LIBRARIES = ("numpy", "matplotlib", "allantools", "aiohttp", "redfish", "pysnmp", "pymodbus",
             "pyserial")


def git_revision(path: Path = Path(__file__).resolve().parent.parent) -> dict:
    try:
        rev = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(path), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {"revision": None, "dirty": None}
    return {"revision": rev or None, "dirty": bool(dirty)}


def versions() -> dict:
    out = {"rackclock": bench.__version__, "python": sys.version.split()[0]}
    for lib in LIBRARIES:
        try:
            out[lib] = metadata.version(lib)
        except metadata.PackageNotFoundError:
            out[lib] = None
    return out


def host() -> dict:
    return {"hostname": socket.gethostname(), "platform": platform.platform(),
            "machine": platform.machine()}
