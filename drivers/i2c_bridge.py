"""Transport of an I2C-to-serial bridge with several module ports: framing, checksums, tags and
timeouts over any pyserial URL (`serial_for_url`: a device path, `socket://` to a ser2net-style
serial server, `rfc2217://`, `loop://`). It knows nothing of CMIS; drivers/serial_optic.py does.

Line protocol (ASCII, one request line, one answer line; ABNF, RFC 5234):

    line      = payload "*" checksum CRLF         ; the bridge also accepts a bare LF
    checksum  = 2HEXDIG                            ; XOR of every payload octet, upper case (NMEA)
    payload   = tag SP ( request / answer )
    tag       = 4HEXDIG / "----"                   ; chosen by the host, echoed; "----": unreadable
    request   = "ID"                               ; identify the bridge
              / "SEL" SP port                      ; select the module port (the I2C mux)
              / "RD" SP page SP offset SP count    ; read count bytes of the selected module
              / "WR" SP page SP offset SP data     ; write bytes to the selected module
              / "HIST" SP seq                      ; the bridge's pin-change history after seq
    answer    = "OK" SP "ID" 1*(SP key "=" value)  ; keys vendor, model, serial, fw, ports
              / "OK" SP "SEL" SP port
              / "OK" SP "RD" SP page SP offset SP data
              / "OK" SP "WR" SP page SP offset SP count
              / "OK" SP "HIST" SP seq *1(SP event *("," event))     ; at most 8 events
              / "ERR" SP code SP text
    event     = seq ":" port ":" pin ":" level     ; pin "INT" (IntL) or "PRS" (ModPrsL), level 0/1
    port      = 1*2DIGIT
    page      = 2HEXDIG                            ; CMIS page; the bridge writes byte 127 itself
    offset    = 2HEXDIG                            ; 00-7F lower memory, 80-FF the page's upper
    count     = 1*3DIGIT                           ; 1..128, offset + count <= 256
    data      = 1*(2HEXDIG)                        ; 1..128 bytes
    seq       = 1*8DIGIT
    key       = 1*ALPHA
    value     = 1*VCHAR
    code      = 2DIGIT ; 01 checksum, 02 syntax, 03 port, 04 nack (no module), 05 range,
                       ; 06 I2C timeout (module holds the bus), 99 internal
    text      = *(VCHAR / SP)

The tag exists because a late answer to a timed-out request must never be taken for the next
answer: a counter value sampled before the next bracket opened would break it. Answers with
another tag are discarded as stale; the input buffer is flushed before each request.

Bracket of an exchange: `s_ns` just before the request is written, `e_ns` just after the read
that delivered the answer's line end. pyserial's `readline()` reads one byte per call
(docs/protocol_floors.md), so the port is opened non-blocking and read in chunks after
`select` on its descriptor.

Errors (DeviceError kinds): cannot open -> "unreachable"; the port or socket goes away during an
exchange -> "reset" (the next exchange reopens); no full answer in `timeout_s`, or the request
stuck in the output buffer that long -> "timeout";
bad checksum, garbled line, wrong echo -> "malformed"; `ERR` answers -> "protocol", except
04 -> "unreachable" and 06 -> "timeout".
"""
from __future__ import annotations

import re
import select
import time
from collections.abc import Callable
from dataclasses import dataclass

import serial

from drivers.base import DeviceError

_LINK_ERRORS: tuple[type[Exception], ...] = (serial.SerialException, OSError)
try:
    from termios import error as _termios_error
    _LINK_ERRORS += (_termios_error,)
except ImportError:                      # not posix
    pass
_LINE = re.compile(r"^([0-9A-F]{4}|----) (OK|ERR) (.*)$")
ERR_KIND = {4: "unreachable", 6: "timeout"}


def checksum(payload: bytes) -> int:
    c = 0
    for b in payload:
        c ^= b
    return c


def encode(payload: str) -> bytes:
    raw = payload.encode("ascii")
    return b"%s*%02X\r\n" % (raw, checksum(raw))


@dataclass(frozen=True)
class Answer:
    """One exchange: the OK answer's words after the command, its bracket and the raw line."""

    words: tuple[str, ...]
    s_ns: int
    e_ns: int
    raw: str


def pyserial_url(address: str) -> str:
    """Inventory address -> pyserial URL: `serial:///dev/ttyUSB0` -> `/dev/ttyUSB0`."""
    if address.startswith("serial://"):
        return address[len("serial://"):]
    return address


MAX_LINE = 4096                        # bytes of one answer line at most (size cap)


class BridgeLink:
    def __init__(self, device: str, address: str, now_ns: Callable[[], int],
                 baudrate: int = 115200, timeout_s: float = 1.0):
        self.device = device
        self.url = pyserial_url(address)
        self.now_ns = now_ns
        self.baudrate = baudrate
        self.timeout_s = timeout_s
        self.ser: serial.SerialBase | None = None
        self._tag = 0
        self.stale = 0                   # answers discarded because their tag was not ours

    def _error(self, kind: str, message: str) -> DeviceError:
        return DeviceError(self.device, kind, message)

    # -- lifecycle -------------------------------------------------------------------------------
    def open(self) -> None:
        if self.url in ("", "auto", "/auto"):
            raise self._error("unreachable", f"address {self.url!r} is not a port (unresolved?)")
        try:
            self.ser = ser = serial.serial_for_url(self.url, baudrate=self.baudrate, timeout=0,
                                                   write_timeout=self.timeout_s)
            ser.reset_input_buffer()
        except _LINK_ERRORS + (ValueError,) as exc:
            self.close()
            raise self._error("unreachable", f"cannot open {self.url}: {exc}") from None

    def close(self) -> None:
        ser, self.ser = self.ser, None
        if ser is not None:
            try:
                ser.close()
            except _LINK_ERRORS:
                pass

    # -- one exchange -----------------------------------------------------------------------------
    def _next_tag(self) -> str:
        self._tag = self._tag % 0xFFFF + 1
        return f"{self._tag:04X}"

    def _wait_readable(self, ser: serial.SerialBase, deadline: float) -> bool:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            fd = ser.fileno()
        except (AttributeError, NotImplementedError, serial.SerialException):
            time.sleep(min(left, 0.0002))      # handlers without a descriptor: poll
            return True
        ready, _, _ = select.select([fd], [], [], left)
        return bool(ready)

    def _parse(self, line: bytes) -> tuple[str, str, str]:
        text = line.decode("ascii", "replace")
        body, star, check = text.rpartition("*")
        if not star or not re.fullmatch(r"[0-9A-F]{2}", check):
            raise self._error("malformed", f"garbled answer {text!r} (no *XX checksum)")
        if int(check, 16) != checksum(body.encode("ascii", "replace")):
            raise self._error("malformed", f"checksum mismatch in {text!r} "
                                           f"(computed {checksum(body.encode('ascii', 'replace')):02X})")
        m = _LINE.match(body)
        if not m:
            raise self._error("malformed", f"unparseable answer {text!r}")
        return m.group(1), m.group(2), m.group(3)

    def exchange(self, command: str, *args: str) -> Answer:
        """Send one request and wait for its answer; raises DeviceError, never hangs."""
        ser = self.ser
        if ser is None:
            self.open()
            ser = self.ser
        assert ser is not None                 # open() sets it or raises
        tag = self._next_tag()
        request = encode(" ".join((tag, command) + args))
        buf = bytearray()
        try:
            ser.reset_input_buffer()
            s = self.now_ns()
            ser.write(request)
            deadline = time.monotonic() + self.timeout_s
            while True:
                if not self._wait_readable(ser, deadline):
                    raise self._error("timeout", f"no answer to {command} {' '.join(args)} "
                                                 f"within {self.timeout_s * 1e3:.0f} ms "
                                                 f"(received {bytes(buf[:200])!r})")
                chunk = ser.read(4096)
                e = self.now_ns()
                buf.extend(chunk)
                if len(buf) > MAX_LINE and buf.find(b"\n") < 0:    # a flood, not an answer
                    raise self._error("malformed", f"{len(buf)} bytes without an end of line "
                                                   f"(answers are under {MAX_LINE}): "
                                                   f"{bytes(buf[:80])!r}...")
                found = self._our_line(buf, tag)
                if found is not None:
                    status, rest, line = found
                    return self._answer(command, args, status, rest, s, e, line)
        except serial.SerialTimeoutException:
            raise self._error("timeout", f"{command} could not be written within "
                                         f"{self.timeout_s * 1e3:.0f} ms (output stuck)") from None
        except _LINK_ERRORS as exc:
            self.close()
            raise self._error("reset", f"link lost during {command}: {exc}") from None

    def _our_line(self, buf: bytearray, tag: str) -> tuple[str, str, bytes] | None:
        """(status, rest, line) of the first whole line in `buf` answering `tag`, taken out of
        `buf` with the lines before it (stale answers, counted); None when none has come yet."""
        while (i := buf.find(b"\n")) >= 0:
            line = bytes(buf[:i]).rstrip(b"\r")
            del buf[:i + 1]
            if not line:
                continue
            got, status, rest = self._parse(line)
            if got != tag:
                self.stale += 1
                continue
            return status, rest, line
        return None

    def _answer(self, command, args, status, rest, s, e, line) -> Answer:
        raw = line.decode("ascii", "replace")
        if status == "ERR":
            code, _, text = rest.partition(" ")
            kind = ERR_KIND.get(int(code) if code.isdigit() else -1, "protocol")
            raise self._error(kind, f"bridge answered {command} with ERR {code} {text}")
        words = tuple(rest.split(" "))
        echo = {"RD": 2, "WR": 2, "SEL": 1}.get(command, 0)
        if words[0] != command or tuple(w.upper() for w in words[1:1 + echo]) != \
                tuple(a.upper() for a in args[:echo]):
            raise self._error("malformed", f"answer {raw!r} does not echo {command} {' '.join(args)}")
        return Answer(words[1:], s, e, raw)

    # -- the commands -----------------------------------------------------------------------------
    def identify(self) -> tuple[dict[str, str], Answer]:
        a = self.exchange("ID")
        info = dict(w.partition("=")[::2] for w in a.words if "=" in w)
        return info, a

    def select_port(self, port: int) -> Answer:
        return self.exchange("SEL", str(port))

    def read(self, page: int, offset: int, count: int) -> tuple[bytes, Answer]:
        a = self.exchange("RD", f"{page:02X}", f"{offset:02X}", str(count))
        try:
            data = bytes.fromhex(a.words[2])
        except (IndexError, ValueError):
            data = b""
        if len(data) != count:
            raise self._error("malformed", f"asked {count} bytes, answer {a.raw!r}")
        return data, a

    def write(self, page: int, offset: int, data: bytes) -> Answer:
        return self.exchange("WR", f"{page:02X}", f"{offset:02X}", data.hex().upper())

    def history(self, since: int) -> tuple[int, list[tuple[int, int, str, int]], Answer]:
        """Pin changes after `since`: (next seq, [(seq, port, pin, level)], answer)."""
        a = self.exchange("HIST", str(since))
        try:
            nxt = int(a.words[0])
            events = []
            for ev in (a.words[1].split(",") if len(a.words) > 1 else []):
                q, p, pin, lvl = ev.split(":")
                events.append((int(q), int(p), pin, int(lvl)))
        except (IndexError, ValueError):
            raise self._error("malformed", f"unparseable history {a.raw!r}") from None
        return nxt, events, a
