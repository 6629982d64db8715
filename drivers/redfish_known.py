"""What a Redfish driver found out about a service, kept across its sessions.

The runner and the lab open a new driver at every reconnect; a full discovery (every Manager,
every LogService and its entries) costs tens of GETs, which a failing device would repeat at each
reopen. It is kept here, per device (name and address), with the service root it was found
under: a later session reads the root anyway (its links and its authentication) and then the
chosen Manager (one GET); while the root is the same and the Manager still has `DateTime` and
the same layout (`layout`: its Id, type and links), the choice stands and nothing else is asked.
A read that finds the chosen Manager without `DateTime`, or any 404 answer, forgets it, so the
next session looks again. A
discovery that failed is repeated at most once a minute (`RETRY_NS`); in between a reopen fails
at once with the same reason, at the cost of the root's GET.
"""
from __future__ import annotations

from dataclasses import dataclass, field

NS = 1_000_000_000
RETRY_NS = 60 * NS


@dataclass
class Known:
    root: dict                           # the service root the rest was found under
    manager: str = ""                    # the Manager read, and how it was chosen
    manager_choice: str = ""
    manager_layout: str = ""             # `layout` of the Manager when it was chosen
    failed: tuple[str, str, int] | None = None    # (kind, message, when) of a failed discovery
    log: dict = field(default_factory=dict)       # the event log's choice (drivers/redfish_log.py)


_KNOWN: dict[tuple[str, str], Known] = {}


def known(name: str, address: str, root: dict) -> Known:
    """The device's record under this service root (a fresh one when the root changed)."""
    k = _KNOWN.get((name, address))
    if k is None or k.root != root:
        k = _KNOWN[name, address] = Known(root)
    return k


def renew(name: str, address: str, root: dict) -> Known:
    """A fresh record (the kept one no longer holds)."""
    k = _KNOWN[name, address] = Known(root)
    return k


def layout(manager: dict) -> str:
    """What of a Manager must stay the same for a kept discovery to hold (not its clock)."""
    import json
    keep = ("@odata.id", "@odata.type", "Id", "LogServices", "NetworkProtocol", "Links")
    return json.dumps({k: manager.get(k) for k in keep}, sort_keys=True, default=str)


def forget(name: str, address: str) -> None:
    _KNOWN.pop((name, address), None)
