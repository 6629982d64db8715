"""drivers/snmp_v2c's hand-written envelopes against pysnmp's message API and pyasn1: answers
decode to the same community, request-id, error fields and varbinds (types and values) for
every SMIv2 value type, nothing is taken from what is not a v2c Response, and requests are
the same bytes."""
from __future__ import annotations

import pytest
from pyasn1.codec.ber import encoder
from pyasn1.type import univ
from pysnmp.proto import rfc1902, rfc1905
from pysnmp.proto.api import v1, v2c

from drivers.snmp_v2c import _decode_with_pyasn1, decode_response, encode_request, encode_varbinds

VALUES = [rfc1902.TimeTicks(0), rfc1902.TimeTicks(2 ** 32 - 1), rfc1902.TimeTicks(2 ** 31),
          rfc1902.Integer(-2 ** 31), rfc1902.Integer(0), rfc1902.Integer(127),
          rfc1902.Integer(128), rfc1902.Integer(2 ** 31 - 1),
          rfc1902.OctetString(b""), rfc1902.OctetString(b"\x07\xea\x0b\x1d\x11\x0a\x37\x05+\x01\x00"),
          rfc1902.OctetString(b"x" * 300), univ.ObjectIdentifier("1.3.6.1.4.1.318.1.3.4.5"),
          univ.ObjectIdentifier("2.999.3"), rfc1902.IpAddress("10.1.2.3"), rfc1902.Counter32(7),
          rfc1902.Gauge32(2 ** 32 - 1), rfc1902.Counter64(2 ** 64 - 1), rfc1902.Opaque(b"\x01\x02"),
          univ.Null(""), rfc1905.noSuchObject, rfc1905.noSuchInstance, rfc1905.endOfMibView]


def response(varbinds, community=b"rc-test-ro", request_id=4711, status=0, index=0,
             pdu_class=v2c.ResponsePDU, api=v2c) -> bytes:
    pdu = pdu_class()
    api.apiPDU.set_defaults(pdu)
    api.apiPDU.set_request_id(pdu, request_id)
    api.apiPDU.set_error_status(pdu, status)
    api.apiPDU.set_error_index(pdu, index)
    api.apiPDU.set_varbinds(pdu, varbinds)
    msg = api.Message()
    api.apiMessage.set_defaults(msg)
    api.apiMessage.set_community(msg, community)
    api.apiMessage.set_pdu(msg, pdu)
    return encoder.encode(msg)


def same(a, b):
    (ca, ra, sa, ia, va), (cb, rb, sb, ib, vb) = a, b
    assert (ca, ra, int(sa), int(ia), sa.prettyPrint()) == (cb, rb, int(sb), int(ib), sb.prettyPrint())
    assert len(va) == len(vb)
    for (na, xa), (nb, xb) in zip(va, vb):
        assert type(na) is type(nb) and na == nb
        assert type(xa) is type(xb) and xa.tagSet == xb.tagSet, (xa, xb)
        assert xa.prettyPrint() == xb.prettyPrint()


@pytest.mark.parametrize("value", VALUES, ids=lambda v: f"{type(v).__name__}:{v.prettyPrint()[:12]}")
def test_each_value_type_decodes_as_pyasn1_does(value):
    wire = response([(v2c.ObjectIdentifier("1.3.6.1.2.1.1.3.0"), value)])
    same(decode_response(wire), _decode_with_pyasn1(wire))


def test_many_varbinds_error_fields_and_long_lengths():
    vbs = [(v2c.ObjectIdentifier(f"1.3.6.1.4.1.318.1.1.12.3.3.1.1.{i}.{2 ** 28 + i}"), v)
           for i, v in enumerate(VALUES * 3)]
    wire = response(vbs, request_id=2 ** 31 - 1, status=6, index=3, community=b"c" * 200)
    assert len(wire) > 256                                   # two-byte lengths on the way
    got = decode_response(wire)
    same(got, _decode_with_pyasn1(wire))
    assert got[2].prettyPrint() == "noAccess" and int(got[3]) == 3


@pytest.mark.parametrize("wire", [
    b"", b"\x30\x03\x02\x01\x07garbage", b"\x30\x80\x02\x01\x01\x00\x00",
    response([(v2c.ObjectIdentifier("1.3.6.1.2.1.1.3.0"), v2c.Null(""))],
             pdu_class=v2c.GetRequestPDU),                    # a request, not an answer
    response([(v1.ObjectIdentifier("1.3.6.1.2.1.1.3.0"), rfc1902.TimeTicks(5))],
             pdu_class=v1.GetResponsePDU, api=v1),            # SNMPv1
], ids=["empty", "garbage", "indefinite", "request", "v1"])
def test_what_is_not_a_v2c_response_is_refused_by_both(wire):
    with pytest.raises(ValueError):
        decode_response(wire)
    with pytest.raises(Exception):  # noqa: B017 (pyasn1 raises its own error classes)
        _decode_with_pyasn1(wire)


def test_truncated_answers_are_refused():
    wire = response([(v2c.ObjectIdentifier("1.3.6.1.2.1.1.3.0"), rfc1902.TimeTicks(123456))])
    for n in range(len(wire)):
        with pytest.raises(ValueError):
            decode_response(wire[:n])
    with pytest.raises(ValueError):
        decode_response(wire + b"\x00")


@pytest.mark.parametrize("kind,pdu_class", [("get", v2c.GetRequestPDU),
                                            ("next", v2c.GetNextRequestPDU),
                                            ("set", v2c.SetRequestPDU)])
@pytest.mark.parametrize("request_id", [1, 127, 128, 255, 256, 2 ** 31 - 1])
def test_requests_are_the_bytes_pysnmp_writes(kind, pdu_class, request_id):
    """encode_request + encode_varbinds give byte for byte what pysnmp's message API and pyasn1
    give for the same request."""
    values = [None, rfc1902.Integer(2),
              rfc1902.OctetString(b"\x07\xea\x0b\x1d\x11\x0a\x37\x05+\x00\x00")]
    varbinds = [(f"1.3.6.1.4.1.318.1.1.12.3.3.1.1.4.{i}", v if kind == "set" else None)
                for i, v in enumerate(values * 20)]                  # long-form lengths
    pdu = pdu_class()
    v2c.apiPDU.set_defaults(pdu)
    v2c.apiPDU.set_request_id(pdu, request_id)
    v2c.apiPDU.set_varbinds(pdu, [(v2c.ObjectIdentifier(o), v2c.Null("") if v is None else v)
                                  for o, v in varbinds])
    msg = v2c.Message()
    v2c.apiMessage.set_defaults(msg)
    v2c.apiMessage.set_community(msg, b"rc-test-rw")
    v2c.apiMessage.set_pdu(msg, pdu)
    assert encode_request(kind, b"rc-test-rw", request_id, encode_varbinds(varbinds)) == \
        encoder.encode(msg)
