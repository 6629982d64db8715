"""Property-based tests of the drivers' pure answer parsers (issue 31, Build 5): whatever a
device sends, each raises only the errors its caller turns into the device's one-line error
(ValueError for the Redfish date-time, SNMP DateAndTime and v2c message readers; ValueError or
OverflowError for the Modbus RTC registers; pyasn1's own for the fallback v2c reader), or none
at all (log-entry ids, links, error bodies, kmsg records). Fixed seed, a few seconds."""
from __future__ import annotations

import tomllib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyasn1.error import PyAsn1Error
from pyasn1.type import univ
from pysnmp.proto import rfc1902

from bench.config.inventory import device_from_table
from bench.sim.serve import DEFAULT_RACK
from drivers.base import DeviceError
from drivers.host_kernel import parse_record
from drivers.modbus_cooling import ModbusCooling, from_bcd
from drivers.redfish_bmc import _redfish_message
from drivers.redfish_discovery import link as _link
from drivers.redfish_discovery import members as _members
from drivers.redfish_log import _id_key
from drivers.redfish_time import parse_datetime_ns
from drivers.snmp_pdu import decode_date_and_time
from drivers.snmp_v2c import _decode_with_pyasn1, _wrap, decode_response, encode_varbinds

SHORT = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow])
PROPERTIES: dict[str, tuple] = {}     # name -> (strategies, the plain property)


def prop(*strategies):
    """A property, run SHORT here; benchmarks/fuzz/parsers.py runs the same ones long."""
    def wrap(fn):
        PROPERTIES[fn.__name__] = (strategies, fn)
        return SHORT(given(*strategies)(fn))
    return wrap
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.sampled_from(["@odata.id", "Members", "error", "code",
                                                       "message", "@Message.ExtendedInfo",
                                                       "MessageId", "Message", "x"]), inner,
                                      max_size=4), max_leaves=12)
OFFSET = st.one_of(st.none(), st.text(max_size=8),
                   st.from_regex(r"[+-]\d{1,2}:\d{1,2}", fullmatch=True))
ISO_LIKE = st.one_of(
    st.text(max_size=40),
    st.datetimes(min_value=__import__("datetime").datetime(1, 1, 1),
                 timezones=st.none() | st.timezones()).map(lambda t: t.isoformat()),
    st.from_regex(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?([+-]\d\d:\d\d|Z)?", fullmatch=True))


@prop(ISO_LIKE, OFFSET)
def test_redfish_datetime_parser_raises_only_value_error(text, offset):
    try:
        assert isinstance(parse_datetime_ns(text, offset), int)
    except ValueError:
        pass


@prop(JSON, st.text(max_size=12))
def test_redfish_links_ids_and_error_bodies_never_raise(body, entry_id):
    _link(body, "x")
    _link(body)
    _redfish_message(body)
    _id_key(entry_id)
    if isinstance(body, dict):
        try:
            assert isinstance(_members(body), list)
        except DeviceError as exc:     # Members not an array: one clear error (see below)
            assert exc.kind == "malformed" and "not an array" in exc.message


def test_redfish_members_of_a_collection_whose_members_is_a_number():
    """Found by the fuzz (issue 31): `"Members": 1` raised TypeError out of open()."""
    with pytest.raises(DeviceError, match="Members is int"):
        _members({"@odata.id": "/redfish/v1/Managers", "Members": 1}, "bmc-x")
    assert _members({"Members": None}) == [] and _members({}) == []


@prop(st.binary(max_size=14))
def test_snmp_date_and_time_raises_only_value_error(octets):
    try:
        ns, offset = decode_date_and_time(octets)
        assert isinstance(ns, int) and (offset is None or -13 * 60 - 59 <= offset <= 13 * 60 + 59)
    except ValueError:
        pass


def _response(varbinds, community=b"public", request_id=7) -> bytes:
    rid = request_id.to_bytes(request_id.bit_length() // 8 + 1, "big", signed=True)
    pdu = _wrap(0xA2, b"\x02" + bytes((len(rid),)) + rid + b"\x02\x01\x00\x02\x01\x00"
                + encode_varbinds(varbinds))
    return _wrap(0x30, b"\x02\x01\x01" + _wrap(0x04, community) + pdu)


VALID = _response([((1, 3, 6, 1, 2, 1, 1, 3, 0), rfc1902.TimeTicks(123456)),
                   ((1, 3, 6, 1, 2, 1, 25, 1, 2, 0), univ.OctetString(b"\x07\xea\x0b\x1d\x12\x03"
                                                                       b"\x1d\x00+\x01\x00"))])


@st.composite
def datagrams(draw) -> bytes:
    """A valid v2c Response with bytes flipped, cut, or inserted; or any bytes."""
    if draw(st.booleans()):
        return draw(st.binary(max_size=80))
    b = bytearray(VALID)
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(b) - 1))
        op = draw(st.sampled_from(["flip", "cut", "insert"]))
        if op == "flip":
            b[i] = draw(st.integers(0, 255))
        elif op == "cut":
            del b[i:]
            if not b:
                break
        else:
            b[i:i] = draw(st.binary(min_size=1, max_size=4))
    return bytes(b)


@prop(datagrams())
def test_snmp_v2c_readers_raise_only_what_their_caller_catches(datagram):
    try:
        decode_response(datagram)
    except ValueError:
        pass
    try:
        _decode_with_pyasn1(datagram)
    except (PyAsn1Error, ValueError, TypeError, AttributeError):   # snmp_v2c._received's list
        pass


def _cooling(name: str) -> ModbusCooling:
    """The default rack's CDU driver, with a pymodbus client that is never connected (decoding
    registers uses its converters only)."""
    from pymodbus.client import ModbusTcpClient

    table = tomllib.loads(DEFAULT_RACK.read_text())["devices"][name]
    drv = ModbusCooling(device_from_table(name, {k: v for k, v in table.items() if k != "sim"}),
                        lambda: 0)
    drv.client = ModbusTcpClient("127.0.0.1", port=9)
    return drv


COOLING = {name: _cooling(name) for name in ("cdu-1", "cdu-2")}     # family A and B maps


@prop(st.sampled_from(sorted(COOLING)), st.data(), st.integers(0, 0xFFFF))
def test_modbus_rtc_registers_raise_only_what_read_clock_catches(name, data, word):
    drv = COOLING[name]
    n = drv.map.rtc.span.count            # what a read of the RTC's span returns
    regs = data.draw(st.lists(st.integers(0, 0xFFFF), min_size=n, max_size=n))
    try:
        assert isinstance(drv.decode_rtc(regs), int)
    except (ValueError, OverflowError):
        pass
    try:
        assert 0 <= from_bcd(word, "word") <= 9999
    except ValueError:
        pass


@prop(st.one_of(st.text(max_size=60),
                 st.from_regex(r"\d{1,3},\d{1,20},\d{1,25},[-c+]?(,\w*)*;.{0,20}", fullmatch=True)))
def test_kmsg_records_parse_or_are_none(line):
    rec = parse_record(line)
    assert rec is None or (isinstance(rec[0], int) and isinstance(rec[1], int))
