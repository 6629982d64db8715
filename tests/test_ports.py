"""bench.ports.free_port: below the ephemeral range, never a bound port, never another caller's."""
from __future__ import annotations

import fcntl
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from bench import ports

ORDER = """
import random, sys
from bench import ports
random.sample = lambda seq, k: [int(a) for a in sys.argv[1:]]
print(ports.free_port(), flush=True)
sys.stdin.readline()
"""


def candidates(monkeypatch, *order: int) -> None:
    monkeypatch.setattr(ports.random, "sample", lambda seq, k: [p for p in order if p in seq])


def unreserved(port: int) -> bool:
    ports.reservations().mkdir(exist_ok=True)
    fd = os.open(ports.reservations() / f"{port}.lock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def bindable_below_the_ephemeral_range():
    """Ports nothing holds now, highest first (below the range: few pick there)."""
    for p in range(ports._ephemeral_low() - 1, ports.LOW, -1):
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", p))
        except OSError:
            continue
        yield p


def two_free_below_the_ephemeral_range() -> tuple[int, int]:
    """Two ports nothing holds or has reserved."""
    found = []
    for p in bindable_below_the_ephemeral_range():
        if not unreserved(p):
            continue
        found.append(p)
        if len(found) == 2:
            return found[0], found[1]
    pytest.skip("no two free ports below the ephemeral range")


def test_a_port_is_below_the_ephemeral_range_and_free():
    low = ports._ephemeral_low()
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        p = ports.free_port(kind)
        assert ports.LOW <= p < low
        with socket.socket(socket.AF_INET, kind) as s:
            s.bind(("127.0.0.1", p))


def test_a_bound_port_is_skipped(monkeypatch):
    a, b = two_free_below_the_ephemeral_range()
    candidates(monkeypatch, a, b)
    with socket.socket() as s:
        s.bind(("127.0.0.1", a))
        assert ports.free_port() == b


def test_a_port_another_process_picked_is_not_handed_out_again(monkeypatch):
    a, b = two_free_below_the_ephemeral_range()
    other = subprocess.Popen([sys.executable, "-c", ORDER, str(a), str(b)], text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             cwd=Path(__file__).parents[1])
    try:
        assert other.stdout.readline().strip() == str(a)     # reserved there, never bound
        candidates(monkeypatch, a, b)
        assert ports.free_port() == b
    finally:
        other.kill()
        other.wait()


def test_a_reservation_file_goes_when_its_process_ends():
    """Its lock file is removed at exit (issue 31, Why 9): the folder does not fill with them."""
    p = subprocess.run([sys.executable, "-c", "from bench import ports; "
                        "print(ports.reservations() / f'{ports.free_port()}.lock')"],
                       capture_output=True, text=True, cwd=Path(__file__).parents[1], timeout=60)
    lock = Path(p.stdout.strip())
    assert p.returncode == 0 and lock.name.endswith(".lock"), p.stderr
    assert not lock.exists()
