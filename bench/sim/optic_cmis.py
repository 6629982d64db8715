"""One emulated CMIS 5 optical module: its memory map, latched flags, TX disable, VDM freeze and
an optional vendor power-on counter, as seen over I2C at reference instants.

Memory map (CMIS 5.x, bank 0; the bridge selects the page, bytes 126/127 are its business):

| where        | bytes    | holds |
|--------------|----------|-------|
| lower page   | 0        | SFF-8024 identifier (0x18 QSFP-DD) |
|              | 1        | CMIS revision (0x50 = 5.0) |
|              | 2        | bit 7 = 0: paged memory |
|              | 3        | module state in bits 3-1 (3 = ModuleReady) |
|              | 39-40    | active firmware revision, major then minor |
| page 00h     | 128      | identifier again |
|              | 129-144  | vendor name, ASCII, space padded |
|              | 145-147  | vendor OUI |
|              | 148-163  | part number |
|              | 164-165  | revision |
|              | 166-181  | serial number |
|              | 182-189  | date code YYMMDD + 2-char lot |
| page 01h     | 142      | bit 6: VDM supported |
| page 10h     | 130      | TxDisable, bit n-1 = lane n (writable) |
| page 11h     | 135      | latched TxFault flags, bit per lane (clear on read) |
|              | 136-146  | other latched TX flags (never set here; clear on read) |
|              | 147      | latched RxLOS flags, bit per lane (clear on read) |
| page 2Fh     | 128      | VDM groups supported - 1 (0: one group) |
|              | 144      | VDM control: bit 7 FreezeRequest (writable) |
|              | 145      | VDM status: bit 7 FreezeDone, bit 6 UnfreezeDone |
| page A0h     | 128-131  | vendor power-on counter, big-endian ticks (only where the module has one) |

VDM bits: byte 144 bit 7 and byte 145 bits 7/6 are what SONiC's CMIS map uses (and what its
xcvrd writes: 128 to freeze, 0 to unfreeze); other public code puts FreezeDone in byte 144 bit 6.
We follow SONiC: write 0x80 to 2Fh:144, wait for 2Fh:145 bit 7; write 0x00, wait for bit 6.

Latched flags are set on the rising edge of their condition and cleared when the host reads
them; CMIS has no raw lane LOS status, so a LOS that persists is seen once. The module's
interrupt line (IntL) is asserted while any latched flag is set.

Optical link: a module's TX lanes feed the RX lanes of its `far_end` module (itself by default,
a loopback plug). TxDisable takes `tx_disable_s` to switch the light off; the far end's LOS
asserts `los_assert_s` (uniform in [lo, hi]) after that. Both instants are truth events.
"""
from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.config.keys import Key
from bench.config.schema import FLAG, TEXT, key, list_of, num, span, table
from bench.sim.clock_model import AT_S, CLOCK_KEYS, NS, ClockModel

# a serial optic's `modules.PORT` table (bench/sim/serial_optic_emu.py): the ModuleSpec below
MODULE_KEYS = table({
    "vendor": TEXT, "part": TEXT, "revision": TEXT, "serial": TEXT, "date_code": TEXT,
    "oui": key(Key("str", pattern=r"[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){2}", hint="'00:90:65'")),
    "firmware": key(Key("str", pattern=r"\d{1,3}(\.\d{1,3})?", hint="'MAJOR.MINOR'")),
    "identifier": num(0, 255, kind="int"),
    "lanes": num(1, 8, kind="int"), "far_end": num(1, 255, kind="int"),
    "tx_disable_s": num(0.0, 60.0, "s"), "tx_enable_s": num(0.0, 60.0, "s"),
    "los_assert_s": span(0.0, 60.0), "los_deassert_s": span(0.0, 60.0),
    "vdm_freeze_s": num(0.0, 60.0, "s"), "tx_fault_at_s": list_of(AT_S),
    "counter_page": num(0, 255, kind="int"), "stalled": FLAG, "clock": table(CLOCK_KEYS)})

LOWER, UPPER = 0, 128
FLAG_FIRST, FLAG_LAST = 134, 152            # page 11h latched lane flags (clear on read)
TX_FAULT, RX_LOS = 135, 147
TX_DISABLE = 130                            # page 10h
VDM_CONTROL, VDM_STATUS = 144, 145          # page 2Fh
FREEZE_REQUEST, FREEZE_DONE, UNFREEZE_DONE = 0x80, 0x80, 0x40
COUNTER_OFFSET = 128


def _ascii(text: str, n: int) -> bytes:
    return text.encode("ascii", "replace")[:n].ljust(n, b" ")


@dataclass(frozen=True)
class ModuleSpec:
    """A module table of the rack file (`[devices.X.sim.modules.PORT]`)."""

    port: int
    vendor: str = "RACKCLOCK OPTICS"
    oui: str = "00:90:65"
    part: str = "RC-400G-DR4"
    revision: str = "A0"
    serial: str = ""
    date_code: str = "260915"
    firmware: str = "5.2"                   # major.minor -> lower page bytes 39-40
    identifier: int = 0x18
    lanes: int = 4
    far_end: int | None = None              # port whose RX this module's TX feeds (None: itself)
    tx_disable_s: float = 0.0001
    tx_enable_s: float = 0.0005
    los_assert_s: tuple[float, float] = (0.0001, 0.0008)
    los_deassert_s: tuple[float, float] = (0.0005, 0.002)
    vdm_freeze_s: float = 0.004
    tx_fault_at_s: tuple[float, ...] = ()   # TX fault pulses, s after the rack's t0
    counter_page: int = 0xA0
    stalled: bool = False                   # holds the I2C bus: never answers
    clock: Mapping[str, Any] | None = None  # the counter's clock table (counter = true), if any

    @property
    def has_counter(self) -> bool:
        return bool(self.clock and self.clock.get("counter", False))

    @property
    def lane_mask(self) -> int:
        return (1 << self.lanes) - 1


def module_spec(port: int, t: Mapping[str, Any]) -> ModuleSpec:
    def pair(x):
        return (float(x), float(x)) if isinstance(x, (int, float)) else (float(x[0]), float(x[1]))

    known = set(ModuleSpec.__dataclass_fields__) - {"port"}
    kw = {k: v for k, v in t.items() if k in known}
    for k in ("los_assert_s", "los_deassert_s"):
        if k in kw:
            kw[k] = pair(kw[k])
    if "tx_fault_at_s" in kw:
        kw["tx_fault_at_s"] = tuple(float(x) for x in kw["tx_fault_at_s"])
    if "clock" in kw:
        kw["clock"] = dict(kw["clock"])
    kw.setdefault("serial", f"RCO{port:05d}")
    return ModuleSpec(port=int(port), **kw)


@dataclass
class ModuleHooks:
    """What a module tells its bridge: truth events, IntL changes, counter samples."""

    event: Callable[..., None] = lambda kind, t_ns, **d: None
    interrupt: Callable[[int, bool, int], None] = lambda port, asserted, t_ns: None
    sample: Callable[[str, int, int], None] = lambda clock, t_ns, value_ns: None


class CmisModule:
    def __init__(self, spec: ModuleSpec, t0_ns: int, counter: ClockModel | None = None,
                 seed: int = 0, hooks: ModuleHooks | None = None):
        self.spec = spec
        self.port = spec.port
        self.counter = counter
        self.counter_name = f"counter{spec.port}"
        self.hooks = hooks or ModuleHooks()
        self.rng = np.random.default_rng(seed)
        self.far: CmisModule = self
        self.stalled = spec.stalled
        self.lower = bytearray(128)
        self.pages = {p: bytearray(128) for p in (0x00, 0x01, 0x10, 0x11, 0x2F)}
        if counter is not None:
            self.pages[spec.counter_page] = bytearray(128)
        self._pending: list = []
        self._order = itertools.count()
        self.rx_los_raw = 0
        self._int = False
        self._fill()
        for at in spec.tx_fault_at_s:
            t = t0_ns + round(at * NS)
            self._at(t, self._tx_fault, spec.lane_mask)
            self.hooks.event("tx_fault", t, port=self.port, lanes=spec.lane_mask)

    def _fill(self) -> None:
        s = self.spec
        major, _, minor = s.firmware.partition(".")
        lo = self.lower
        lo[0], lo[1], lo[2], lo[3] = s.identifier, 0x50, 0x00, 3 << 1
        lo[39], lo[40] = int(major or 0) & 0xFF, int(minor or 0) & 0xFF
        p0 = self.pages[0x00]
        p0[0] = s.identifier                                       # byte 128
        p0[1:17] = _ascii(s.vendor, 16)                            # 129-144
        p0[17:20] = bytes(int(x, 16) for x in s.oui.split(":"))    # 145-147
        p0[20:36] = _ascii(s.part, 16)                             # 148-163
        p0[36:38] = _ascii(s.revision, 2)                          # 164-165
        p0[38:54] = _ascii(s.serial, 16)                           # 166-181
        p0[54:62] = _ascii(s.date_code, 8)                         # 182-189
        self.pages[0x01][142 - UPPER] = 0x40                       # VDM supported
        self.pages[0x2F][128 - UPPER] = 0x00                       # one VDM group

    # -- time -----------------------------------------------------------------------------------
    def _at(self, t_ns: int, fn, *args) -> None:
        heapq.heappush(self._pending, (int(t_ns), next(self._order), fn, args))

    def advance(self, t_ns: int) -> None:
        """Apply every modelled change due at or before reference instant t."""
        while self._pending and self._pending[0][0] <= t_ns:
            at, _, fn, args = heapq.heappop(self._pending)
            fn(at, *args)

    def _update_int(self, t_ns: int) -> None:
        flags = self.pages[0x11][FLAG_FIRST - UPPER:FLAG_LAST - UPPER + 1]
        asserted = any(flags)
        if asserted != self._int:
            self._int = asserted
            self.hooks.interrupt(self.port, asserted, t_ns)

    def _latch(self, t_ns: int, byte: int, mask: int) -> None:
        self.pages[0x11][byte - UPPER] |= mask
        self._update_int(t_ns)

    def _tx_fault(self, t_ns: int, mask: int) -> None:
        self._latch(t_ns, TX_FAULT, mask)

    def _los(self, t_ns: int, mask: int, lost: bool) -> None:
        mask &= self.spec.lane_mask
        if lost:
            rising = mask & ~self.rx_los_raw
            self.rx_los_raw |= mask
            if rising:
                self._latch(t_ns, RX_LOS, rising)
        else:
            self.rx_los_raw &= ~mask

    def _uniform_ns(self, lo_hi: tuple[float, float]) -> int:
        lo, hi = lo_hi
        return round((self.rng.uniform(lo, hi) if hi > lo else lo) * NS)

    def _set_tx_disable(self, t_ns: int, new: int) -> None:
        old = self.pages[0x10][TX_DISABLE - UPPER]
        self.pages[0x10][TX_DISABLE - UPPER] = new
        far = self.far
        off, on = new & ~old & self.spec.lane_mask, old & ~new & self.spec.lane_mask
        if off:
            t_dark = t_ns + round(self.spec.tx_disable_s * NS)
            t_los = t_dark + far._uniform_ns(far.spec.los_assert_s)
            self.hooks.event("tx_disable", t_ns, port=self.port, lanes=off)
            self.hooks.event("rx_los", t_los, port=far.port, lanes=off & far.spec.lane_mask,
                             cause=f"tx_disable port {self.port}")
            far._at(t_los, far._los, off, True)
        if on:
            t_light = t_ns + round(self.spec.tx_enable_s * NS)
            t_clear = t_light + far._uniform_ns(far.spec.los_deassert_s)
            self.hooks.event("tx_enable", t_ns, port=self.port, lanes=on)
            self.hooks.event("rx_los_clear", t_clear, port=far.port, lanes=on & far.spec.lane_mask)
            far._at(t_clear, far._los, on, False)

    def _vdm_done(self, t_ns: int, status: int) -> None:
        self.pages[0x2F][VDM_STATUS - UPPER] = status

    def _set_vdm_control(self, t_ns: int, new: int) -> None:
        page = self.pages[0x2F]
        old = page[VDM_CONTROL - UPPER]
        page[VDM_CONTROL - UPPER] = new
        if (old ^ new) & FREEZE_REQUEST:
            freeze = bool(new & FREEZE_REQUEST)
            page[VDM_STATUS - UPPER] = 0
            t_done = t_ns + round(self.spec.vdm_freeze_s * NS)
            self.hooks.event("vdm_freeze_request" if freeze else "vdm_unfreeze_request", t_ns,
                             port=self.port)
            self.hooks.event("vdm_freeze_done" if freeze else "vdm_unfreeze_done", t_done,
                             port=self.port)
            self._at(t_done, self._vdm_done, FREEZE_DONE if freeze else UNFREEZE_DONE)

    # -- I2C access, at the instant the module serves it ----------------------------------------
    def has_page(self, page: int) -> bool:
        return page in self.pages

    def read(self, page: int, offset: int, n: int, t_ns: int) -> bytes:
        self.advance(t_ns)
        image = bytes(self.lower) + bytes(self.pages[page])
        if self.counter is not None and page == self.spec.counter_page \
                and offset < COUNTER_OFFSET + 4 and offset + n > COUNTER_OFFSET:
            v = self.counter.read_ns(t_ns)
            ticks = (v // self.counter.p.resolution_ns) & 0xFFFFFFFF
            self.hooks.sample(self.counter_name, t_ns, v)
            image = image[:COUNTER_OFFSET] + ticks.to_bytes(4, "big") + image[COUNTER_OFFSET + 4:]
        data = image[offset:offset + n]
        if page == 0x11:                                     # clear on read
            lo, hi = max(offset, FLAG_FIRST), min(offset + n - 1, FLAG_LAST)
            for b in range(lo, hi + 1):
                self.pages[0x11][b - UPPER] = 0
            if lo <= hi:
                self._update_int(t_ns)
        return data

    WRITABLE = {(0x10, TX_DISABLE), (0x2F, VDM_CONTROL)}

    def writable(self, page: int, offset: int, n: int) -> bool:
        return all((page, b) in self.WRITABLE for b in range(offset, offset + n))

    def write(self, page: int, offset: int, data: bytes, t_ns: int) -> None:
        self.advance(t_ns)
        for i, value in enumerate(data):
            if (page, offset + i) == (0x10, TX_DISABLE):
                self._set_tx_disable(t_ns, value)
            elif (page, offset + i) == (0x2F, VDM_CONTROL):
                self._set_vdm_control(t_ns, value)

    @property
    def interrupt(self) -> bool:
        return self._int
