"""The emulated I2C-to-serial bridge: answers the line protocol of drivers/i2c_bridge.py (whose
docstring holds the grammar) for several module ports, taking the time a real sideband takes.

Written apart from the driver on purpose (an emulator must not share the client's code).

Timing of one request (all in modelled reference time, integer ns):
  the request line crosses the UART:  10 bits per byte at `baudrate`
  the bridge starts it when its UART and bus are free; an I2C read costs a 6-byte preamble
  (page select + address) then 9 bits per data byte at `i2c_khz`; the module is accessed
  (flags latched/cleared, the counter sampled) at the end of the preamble
  the answer line crosses the UART back: 10 bits per byte
  the host's USB-serial adapter hands it to the host at its next latency-timer tick.

Latency timer: an FTDI-style adapter runs its latency timer freely and sends a (possibly
status-only) USB packet at every expiry, so a partial packet waits for the next tick on a fixed
grid. We model exactly that: ticks at `phase + k * latency_timer_ms` (phase drawn from the seed),
and the line is delivered at the first tick at or after its last byte reaches the adapter. Over
random request instants this is the uniform [0, L] delay, but it keeps the real structure
(replies that finish within one period leave together), which a uniform draw per reply would not.

A module with `stalled` holds the bus: the bridge answers `ERR 06` after `i2c_timeout_ms`.
Test hooks: `inject(fault)` corrupts the next answer ("checksum", "garble", "silence").
"""
from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.errors import RackclockError
from bench.sim.clock_model import NS
from bench.sim.optic_cmis import CmisModule
from bench.sim.timing import hold

_REQUEST = re.compile(r"^([0-9A-F]{4}) ([A-Z]+)((?: [0-9A-Fa-f]+)*)$")


def xor_checksum(payload: bytes) -> int:
    c = 0
    for b in payload:
        c ^= b
    return c


def frame(payload: str) -> bytes:
    raw = payload.encode("ascii")
    return raw + b"*%02X\r\n" % xor_checksum(raw)


@dataclass(frozen=True)
class BridgeSpec:
    vendor: str = "RACKCLOCK"
    model: str = "I2CB-4"
    serial: str = "BR0001"
    firmware: str = "1.4.2"
    baudrate: int = 115200
    latency_timer_ms: float = 16.0
    i2c_khz: float = 400.0
    bridge_delay_s: float = 0.0002          # the bridge's own turnaround
    i2c_timeout_ms: float = 2000.0          # a stalled bus is given up after this
    max_count: int = 128


class BridgeError(RackclockError):
    def __init__(self, code: int, text: str):
        super().__init__(text)
        self.code, self.text = code, text


class Bridge:
    def __init__(self, spec: BridgeSpec, modules: dict[int, CmisModule], ports: list[int],
                 now_ns: Callable[[], int], t0_ns: int, seed: int = 0):
        self.spec = spec
        self.modules = modules
        self.ports = ports
        self.now_ns = now_ns
        rng = np.random.default_rng(seed)
        self.tick_ns = round(spec.latency_timer_ms * 1e6)
        self.phase_ns = t0_ns + (int(rng.integers(self.tick_ns)) if self.tick_ns else 0)
        self.selected: int | None = None
        self.history: list[tuple[int, int, str, int]] = []    # (seq, port, pin, level)
        self.faults: deque[str] = deque()
        self.busy_until = 0
        self.queue: asyncio.Queue = asyncio.Queue()
        self.closers: list[Callable[[], None]] = []
        self.task: asyncio.Task | None = None

    # -- wiring -----------------------------------------------------------------------------------
    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self._worker())

    def submit(self, line: bytes, t_rx: int, send: Callable[[bytes], None]) -> None:
        self.queue.put_nowait((line, t_rx, send))

    def pin_changed(self, port: int, pin: str, level: int) -> None:
        self.history.append((len(self.history) + 1, port, pin, level))

    def inject(self, fault: str) -> None:
        """Corrupt the next answer: "checksum", "garble" or "silence" (test hook)."""
        self.faults.append(fault)

    def unplug(self) -> None:
        """The bridge vanishes: its pty or TCP server closes (call on the rack's loop)."""
        for close in self.closers:
            close()
        self.closers.clear()
        if self.task:
            self.task.cancel()

    # -- time -------------------------------------------------------------------------------------
    def _wire_ns(self, nbytes: int) -> int:
        return nbytes * 10 * NS // self.spec.baudrate

    def _i2c_ns(self, nbytes: int) -> int:
        return round(nbytes * 9 * 1e6 / self.spec.i2c_khz)

    def _next_tick(self, t_ns: int) -> int:
        if not self.tick_ns:
            return t_ns
        k = -(-(t_ns - self.phase_ns) // self.tick_ns)
        return self.phase_ns + k * self.tick_ns

    async def _until(self, t_ns: int) -> None:
        await hold((t_ns - self.now_ns()) / NS)

    async def _worker(self) -> None:
        while True:
            line, t_rx, send = await self.queue.get()
            try:
                await self._serve(line, t_rx, send)
            except Exception as exc:  # never let one request stop the bridge
                send(frame(f"0000 ERR 99 internal {type(exc).__name__}"))

    async def _serve(self, line: bytes, t_rx: int, send) -> None:
        t_start = max(t_rx + self._wire_ns(len(line) + 2), self.busy_until)
        tag, cmd, args, err = self._parse(line)
        data_bytes, stall = self._transfer(cmd, args) if err is None else (0, False)
        t_access = t_start + (self._i2c_ns(6) if cmd in ("RD", "WR") else 0)
        await self._until(t_access)
        if err is not None:
            payload = f"{tag} ERR {err.code:02d} {err.text}"
            t_done = t_access
        elif stall:
            payload = f"{tag} ERR 06 i2c timeout on port {self.selected}"
            t_done = t_start + round(self.spec.i2c_timeout_ms * 1e6)
        else:
            payload = self._executed(tag, cmd, args, t_access)
            t_done = t_access + self._i2c_ns(data_bytes)
        out = frame(payload)
        t_last = t_done + round(self.spec.bridge_delay_s * NS) + self._wire_ns(len(out))
        self.busy_until = t_last
        await self._until(self._next_tick(t_last))
        faulted = self._with_next_fault(out)
        if faulted is not None:
            send(faulted)

    def _transfer(self, cmd: str, args: list[str]) -> tuple[int, bool]:
        """(data bytes, whether the module stalls the bus) of a RD or WR to the selected
        module; (0, False) for anything else."""
        if cmd not in ("RD", "WR") or self.selected not in self.modules:
            return 0, False
        data_bytes = int(args[2]) if cmd == "RD" else len(args[2]) // 2
        return data_bytes, self.modules[self.selected].stalled

    def _executed(self, tag: str, cmd: str, args: list[str], t_access: int) -> str:
        """The answer's payload to a well-formed command: OK with its result, or its error."""
        try:
            return f"{tag} OK {cmd}" + self._execute(cmd, args, t_access)
        except BridgeError as e:
            return f"{tag} ERR {e.code:02d} {e.text}"

    def _with_next_fault(self, out: bytes) -> bytes | None:
        """The answer as the next queued fault leaves it: None (silence), a wrong checksum or
        garbled bytes; as it is when no fault is queued."""
        fault = self.faults.popleft() if self.faults else None
        if fault == "silence":
            return None
        if fault == "checksum":
            out = out[:-4] + b"%02X\r\n" % (xor_checksum(out[:-5]) ^ 0x5A)
        elif fault == "garble":
            out = bytes(b ^ 0x21 if i % 3 == 1 else b for i, b in enumerate(out[:-2])) + b"\r\n"
        return out

    # -- the protocol -------------------------------------------------------------------------------
    def _parse(self, line: bytes):
        text = line.decode("ascii", "replace").strip()
        body, star, check = text.rpartition("*")
        tag = text[:4] if re.fullmatch(r"[0-9A-F]{4}", text[:4]) else "----"
        if not star or not re.fullmatch(r"[0-9A-F]{2}", check):
            return tag, "", [], BridgeError(2, "syntax: no *XX checksum")
        if int(check, 16) != xor_checksum(body.encode("ascii", "replace")):
            return tag, "", [], BridgeError(1, f"checksum mismatch (got {check})")
        m = _REQUEST.match(body)
        if not m:
            return tag, "", [], BridgeError(2, "syntax: expected TAG COMMAND [ARGS]")
        cmd, args = m.group(2), m.group(3).split()
        arity = {"ID": 0, "SEL": 1, "RD": 3, "WR": 3, "HIST": 1}
        if cmd not in arity:
            return tag, cmd, args, BridgeError(2, f"syntax: unknown command {cmd}")
        if len(args) != arity[cmd]:
            return tag, cmd, args, BridgeError(2, f"syntax: {cmd} takes {arity[cmd]} arguments")
        return tag, cmd, args, None

    def _execute(self, cmd: str, args: list[str], t: int) -> str:
        s = self.spec
        if cmd == "ID":
            ports = ",".join(str(p) for p in self.ports)
            return (f" vendor={s.vendor} model={s.model} serial={s.serial} fw={s.firmware}"
                    f" ports={ports}")
        if cmd == "SEL":
            port = int(args[0])
            if port not in self.ports:
                raise BridgeError(3, f"no port {port}")
            self.selected = port
            return f" {port}"
        if cmd == "HIST":
            return self._hist(int(args[0]), t)
        module, page, offset = self._addressed(cmd, args)
        if cmd == "RD":
            return self._read(module, page, offset, int(args[2]), t)
        return self._write(module, page, offset, args[2], t)

    def _hist(self, since: int, t: int) -> str:
        """HIST: the pin events after `since` (at most 8), and the last one's number."""
        for m in self.modules.values():
            m.advance(t)
        new = [h for h in self.history if h[0] > since][:8]
        nxt = new[-1][0] if new else max(since, 0)
        events = ",".join(f"{q}:{p}:{pin}:{lvl}" for q, p, pin, lvl in new)
        return f" {nxt}" + (f" {events}" if events else "")

    def _addressed(self, cmd: str, args: list[str]) -> tuple[Any, int, int]:
        """(module, page, offset) of an RD or WR on the selected port, or BridgeError."""
        if self.selected is None:
            raise BridgeError(3, "no port selected")
        module = self.modules.get(self.selected)
        if module is None:
            raise BridgeError(4, f"nack: no module on port {self.selected}")
        page, offset = int(args[0], 16), int(args[1], 16)
        if page > 0xFF or offset > 0xFF:
            raise BridgeError(5, "range: page and offset are one byte")
        n_span = int(args[2]) if cmd == "RD" else len(args[2]) // 2
        if offset + n_span > 128 and not module.has_page(page):
            raise BridgeError(5, f"range: page {page:02X} not supported by the module")
        return module, page, offset

    def _read(self, module: Any, page: int, offset: int, n: int, t: int) -> str:
        if not 1 <= n <= self.spec.max_count or offset + n > 256:
            raise BridgeError(5, f"range: read of {n} bytes at {offset:02X}")
        data = module.read(page if offset + n > 128 else 0, offset, n, t)
        return f" {page:02X} {offset:02X} {data.hex().upper()}"

    def _write(self, module: Any, page: int, offset: int, text: str, t: int) -> str:
        data = bytes.fromhex(text) if len(text) % 2 == 0 else b""
        if not data or len(data) > self.spec.max_count:
            raise BridgeError(5, "range: write data must be 1..128 whole bytes")
        if not module.writable(page, offset, len(data)):
            raise BridgeError(5, f"range: {page:02X}:{offset:02X} is read-only")
        module.write(page, offset, data, t)
        return f" {page:02X} {offset:02X} {len(data)}"
