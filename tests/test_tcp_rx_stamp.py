"""The kernel's arrival stamps on TCP (drivers/tcp_rx_stamp.py), over real loopback sockets.

On loopback the kernel stamps a segment as the sender's `send` hands it to the receive path, so
the stamp lies between the instants just before and just after that `send`, and before the
reader's own `recv`: a stamp taken by the reader would come after all three."""
from __future__ import annotations

import asyncio
import socket
import time

import pytest
from tcp_pair import stamped_pair

from bench.reference.clock import Reference
from drivers import tcp_rx_stamp

now = Reference.now_ns
pytestmark = pytest.mark.usefixtures("kernel_rx_stamps")    # stamping on before the first socket


def sent(peer: socket.socket, data: bytes) -> tuple[int, int]:
    t0 = now()
    peer.sendall(data)
    return t0, now()


def test_recv_and_recv_into_keep_the_arrival_not_the_read():
    client, peer = stamped_pair()
    with client, peer:
        assert client.rx_ns == 0
        t0, t1 = sent(peer, b"answer")
        time.sleep(0.01)
        before_read = now()
        assert client.recv(100) == b"answer"
        assert t0 <= client.rx_ns <= t1 < before_read
        t0, t1 = sent(peer, b"second")
        time.sleep(0.01)
        buf = bytearray(16)
        assert client.recv_into(buf, 3) == 3 and bytes(buf[:3]) == b"sec"
        assert t0 <= client.rx_ns <= t1
        assert client.recv_into(buf) == 3 and bytes(buf[:3]) == b"ond"
        peer.shutdown(socket.SHUT_WR)
        assert client.recv(100) == b""          # end of stream: no stamp, the last one kept
        assert t0 <= client.rx_ns <= t1
        assert tcp_rx_stamp.arrival(client.rx_ns, t0, now()) == client.rx_ns
        assert tcp_rx_stamp.arrival(client.rx_ns, t1 + 1, now()) is None   # older than the request
        assert tcp_rx_stamp.arrival(None, t0, now()) is None


class Got(asyncio.Protocol):
    def __init__(self):
        self.data = asyncio.get_running_loop().create_future()

    def data_received(self, data):
        if not self.data.done():
            self.data.set_result((data, now()))


class GotBuffered(asyncio.BufferedProtocol):
    def __init__(self):
        self.buf = bytearray(64)
        self.data = asyncio.get_running_loop().create_future()

    def get_buffer(self, sizehint):
        return self.buf

    def buffer_updated(self, nbytes):
        if not self.data.done():
            self.data.set_result((bytes(self.buf[:nbytes]), now()))


def test_asyncio_transports_read_through_the_stamped_socket():
    """Both asyncio read paths (recv for a Protocol, recv_into for a BufferedProtocol) go through
    the socket's own methods; the loop, blocked after the answer arrived, hands the data over
    later, while the stamp stays the arrival's."""
    async def once(protocol):
        with socket.create_server(("127.0.0.1", 0)) as srv:
            host, port = srv.getsockname()
            sock = await tcp_rx_stamp.connect(host, port)
            peer, _ = srv.accept()
        transport, proto = await asyncio.get_running_loop().create_connection(protocol, sock=sock)
        try:
            assert tcp_rx_stamp.stamped_socket_of(transport) is sock
            t0, t1 = sent(peer, b"ping")
            time.sleep(0.02)                    # the loop is busy meanwhile
            data, handed = await asyncio.wait_for(proto.data, 10)
            assert data == b"ping" and t0 <= sock.rx_ns <= t1 < handed
        finally:
            transport.close()
            peer.close()

    async def main():
        await once(Got)
        await once(GotBuffered)

    asyncio.run(main())


def test_only_the_realtime_reference_is_the_kernels_clock():
    assert tcp_rx_stamp.on_kernel_clock(Reference.now_ns)
    assert not tcp_rx_stamp.on_kernel_clock(lambda: Reference.now_ns())
    assert tcp_rx_stamp.stamped_socket_of(None) is None
