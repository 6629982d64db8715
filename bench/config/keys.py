"""The rack file's vocabulary: a key's declared type and range (Key), the one error of a bad
rack file (InventoryError), and the short forms its messages quote. Below bench.config.inventory,
bench.config.schema (a nested table's checks) and bench.model.limit_checks, which all declare keys
with it."""
from __future__ import annotations

import difflib
import math
import re
import reprlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.errors import RackclockError

SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother, _SHORT.maxlist, _SHORT.maxdict = 3, 80, 80, 6, 6


def short(value: Any) -> str:
    """A value as errors quote it: bounded in length and depth, whatever its size."""
    return _SHORT.repr(value)


class InventoryError(RackclockError, ValueError):
    """The rack file is malformed. `str()` is one line naming the file, device and key."""

    def __init__(self, message: str, *, file: str | None = None, device: str | None = None,
                 key: str | None = None):
        self.problem, self.file, self.device, self.key = message, file, device, key
        super().__init__(message)

    def located(self, file: str | None = None, device: str | None = None) -> InventoryError:
        """The same error with its file (and device) filled in where not yet known."""
        return InventoryError(self.problem, file=self.file or file, device=self.device or device,
                              key=self.key)

    def __str__(self) -> str:
        where = [f"{self.file}" if self.file else "",
                 f"device {self.device!r}" if self.device else "",
                 f"key {self.key!r}" if self.key else ""]
        return ": ".join([w for w in where if w] + [self.problem]).replace("\n", " ")


def _is_zone(value: Any) -> bool:
    """An IANA time zone name zoneinfo knows."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError
    if not isinstance(value, str) or not value.strip():
        return False
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return False
    return True


@dataclass(frozen=True)
class Key:
    """A key a rack-file table accepts: its type and accepted range, as said in errors.
    kind: float | int | bool | str | env (an environment variable's name) | path (relative to
    the rack file) | list[int] | list[str] | table | str|list[str] | zone (an IANA time zone)."""

    kind: str
    lo: float | None = None
    hi: float | None = None
    choices: tuple[Any, ...] = ()
    unit: str = ""
    file_suffix: str = ""        # a str naming a file when it ends so (then relative to the rack file)
    pattern: str = ""            # str: the whole value must match this regular expression
    exists: str = ""             # checked at load (bench.config.loader): "file" | "chardev"
    content: Any = field(default=None, compare=False)   # path -> problem text or None (at load)
    hint: str = ""               # what `pattern` accepts, as said in errors

    def accepted(self) -> str:
        if self.choices:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.hint:
            return self.hint
        u = f" {self.unit}" if self.unit else ""
        if self.lo is not None and self.hi is not None:
            return f"{self.kind} from {self.lo:g} to {self.hi:g}{u}"
        if self.lo is not None:
            return f"{self.kind} of at least {self.lo:g}{u}"
        return {"bool": "true or false", "env": "an environment variable's name",
                "path": "a file path (relative to the rack file)", "table": "a table",
                "zone": "an IANA time zone such as 'Europe/Berlin', or 'UTC'"
                }.get(self.kind, self.kind)

    def check(self, value: Any) -> Any:
        """The value, if accepted; InventoryError saying what is accepted otherwise."""
        bad = InventoryError(f"{short(value)} is not accepted ({self.accepted()})")
        k = self.kind
        if "|" in k:
            return self._check_alternatives(value, bad)
        if not self._kind_accepts(value):
            raise bad
        if self.choices and value not in self.choices:
            raise bad
        return value

    def _kind_accepts(self, value: Any) -> bool:
        """Whether the value has this key's kind (and range, pattern)."""
        k = self.kind
        if k == "bool":
            return isinstance(value, bool)
        if k in ("float", "int"):
            return self._number_accepts(value)
        if k in ("str", "path", "env"):
            return self._text_accepts(value)
        if k.startswith("list["):
            return self._list_accepts(value)
        if k == "table":
            return isinstance(value, Mapping)
        if k == "zone":
            return _is_zone(value)
        return True

    def _number_accepts(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.kind == "int" and not isinstance(value, int):
            return False
        return math.isfinite(value) and not (self.lo is not None and value < self.lo) \
            and not (self.hi is not None and value > self.hi)

    def _text_accepts(self, value: Any) -> bool:
        if not isinstance(value, str) or not value.strip():
            return False
        if self.kind == "env" and not ENV_NAME.fullmatch(value):
            return False
        return not (self.pattern and not re.fullmatch(self.pattern, value))

    def _list_accepts(self, value: Any) -> bool:
        if not isinstance(value, list):
            return False
        item = Key(self.kind[5:-1], self.lo, self.hi)
        try:
            for x in value:
                item.check(x)
        except InventoryError:
            return False
        return True

    def _check_alternatives(self, value: Any, bad: InventoryError) -> Any:
        """A "a|b" kind: the value as the first alternative that accepts it."""
        for alt in self.kind.split("|"):
            try:
                return Key(alt, self.lo, self.hi, self.choices).check(value)
            except InventoryError:
                continue
        raise bad


def did_you_mean(word: str, known: Collection[str]) -> str:
    close = difflib.get_close_matches(word, sorted(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(sorted(known))})"
