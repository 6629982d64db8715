"""What a run records about itself when it starts: versions, git revision, host."""
from __future__ import annotations

import platform
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, overload

import bench
from bench.config.inventory import CREDENTIAL

USERINFO = re.compile(r"(?<=://)[^/@\s]+@")
REDACTED = "***"

LIBRARIES = ("numpy", "matplotlib", "allantools", "aiohttp", "redfish", "pysnmp", "pymodbus",
             "pyserial")


_CHECKOUT = Path(__file__).resolve().parents[2]


def git_revision(path: Path = _CHECKOUT) -> dict[str, Any]:
    try:
        rev = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(path), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {"revision": None, "dirty": None}
    return {"revision": rev or None, "dirty": bool(dirty)}


def versions() -> dict[str, str | None]:
    from importlib import metadata  # here, not at the top: every command's start imports this module

    out: dict[str, str | None] = {"rackclock": bench.__version__, "python": sys.version.split()[0]}
    for lib in LIBRARIES:
        try:
            out[lib] = metadata.version(lib)
        except metadata.PackageNotFoundError:
            out[lib] = None
    return out


def host() -> dict[str, str]:
    return {"hostname": socket.gethostname(), "platform": platform.platform(),
            "machine": platform.machine()}


def redact_text(text: str) -> str:
    """URL userinfo (`https://user:password@host`) replaced by ***."""
    return USERINFO.sub(REDACTED + "@", text)


@overload
def redact(value: dict[str, Any]) -> dict[str, Any]: ...
@overload
def redact(value: Any) -> Any: ...


def redact(value: Any) -> Any:
    """A copy of a manifest (or any JSON-like value) with every credential-like key's value
    (password, secret, token, community, privacy_key, auth_key, ...; not the `*_env` keys, which
    name variables) and every URL's userinfo replaced by ***."""
    if isinstance(value, dict):
        return {k: (REDACTED if isinstance(k, str) and CREDENTIAL.search(k)
                    and not k.endswith("_env") and value[k] not in (None, "") else redact(v))
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value
