"""bench/sim/snmp_v2c_agent's hand-read requests and hand-written answers against pyasn1 with
pysnmp's v2c message spec (net-snmp's tools check the same agent in tests/test_snmp_pdu.py)."""
from __future__ import annotations

import pytest
from pyasn1.codec.ber import decoder, encoder
from pysnmp.proto import rfc1902, rfc1905
from pysnmp.proto.api import v1, v2c

from bench.sim.snmp_v2c_agent import GET, GETNEXT, read_request, write_response

NAMES = [(1, 3, 6, 1, 2, 1, 1, 3, 0), (1, 3, 6, 1, 4, 1, 318, 1, 1, 12, 3, 3, 1, 1, 4, 24),
         (1, 3, 6, 1, 3, 7070, 1, 1, 2, 2 ** 31), (2, 999, 3)]


def request(pdu_class, names, community=b"rc-test-ro", request_id=123456, api=v2c) -> bytes:
    pdu = pdu_class()
    api.apiPDU.set_defaults(pdu)
    api.apiPDU.set_request_id(pdu, request_id)
    api.apiPDU.set_varbinds(pdu, [(api.ObjectIdentifier(n), api.Null("")) for n in names])
    msg = api.Message()
    api.apiMessage.set_defaults(msg)
    api.apiMessage.set_community(msg, community)
    api.apiMessage.set_pdu(msg, pdu)
    return encoder.encode(msg)


@pytest.mark.parametrize("pdu_class,tag", [(v2c.GetRequestPDU, GET), (v2c.GetNextRequestPDU, GETNEXT)])
@pytest.mark.parametrize("request_id", [0, 1, 2 ** 31 - 1, -5])
def test_requests_read_as_pyasn1_reads_them(pdu_class, tag, request_id):
    names = NAMES * 4                                        # > 127 bytes: long-form lengths
    wire = request(pdu_class, names, community=b"c" * 150, request_id=request_id)
    community, pdu, rid, got = read_request(wire)
    assert (community, pdu, got) == (b"c" * 150, tag, names)
    assert decoder.decode(rid)[0] == request_id


@pytest.mark.parametrize("wire", [
    request(v2c.SetRequestPDU, NAMES[:1]), request(v2c.GetBulkRequestPDU, NAMES[:1]),
    request(v1.GetRequestPDU, NAMES[:1], api=v1), b"", b"\x30\x03\x02\x01\x07garbage",
    request(v2c.GetRequestPDU, NAMES[:1])[:-1]],
    ids=["set", "getbulk", "v1", "empty", "garbage", "truncated"])
def test_what_the_engine_answers_is_refused(wire):
    with pytest.raises(ValueError):
        read_request(wire)


def test_answers_decode_with_pyasn1_to_the_same_values():
    values = [rfc1902.TimeTicks(2 ** 32 - 1), rfc1902.Integer32(-7), rfc1902.Integer(3),
              rfc1902.OctetString(b"\x07\xea\x0b\x1d\x11\x0a\x37\x05+\x01\x00"),
              rfc1902.OctetString(b"x" * 200), rfc1902.ObjectName((1, 3, 6, 1, 4, 1, 318, 1, 3, 4, 5)),
              rfc1902.Counter32(5), rfc1902.Gauge32(6), rfc1902.Counter64(2 ** 64 - 1),
              v2c.NoSuchObject(), v2c.NoSuchInstance(), v2c.EndOfMibView()]
    varbinds = [(NAMES[i % len(NAMES)], v) for i, v in enumerate(values)]
    _, _, rid, _ = read_request(request(v2c.GetRequestPDU, NAMES[:1], request_id=987654))
    msg, rest = decoder.decode(write_response(b"rc-test-rw", rid, varbinds), asn1Spec=v2c.Message())
    pdu = v2c.apiMessage.get_pdu(msg)
    assert rest == b"" and int(v2c.apiMessage.get_version(msg)) == 1
    assert bytes(v2c.apiMessage.get_community(msg)) == b"rc-test-rw"
    assert pdu.tagSet == v2c.ResponsePDU.tagSet and int(v2c.apiPDU.get_request_id(pdu)) == 987654
    assert (int(v2c.apiPDU.get_error_status(pdu)), int(v2c.apiPDU.get_error_index(pdu))) == (0, 0)
    got = v2c.apiPDU.get_varbinds(pdu)
    assert [tuple(n) for n, _ in got] == [n for n, _ in varbinds]
    for (_, want), (_, have) in zip(varbinds, got):
        assert have.tagSet == want.tagSet and have.prettyPrint() == want.prettyPrint()
    assert isinstance(got[-1][1], rfc1905.EndOfMibView)
