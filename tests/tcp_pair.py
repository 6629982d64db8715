"""A connected loopback TCP pair whose client keeps the kernel's arrival stamps
(drivers/tcp_rx_stamp.py): the client first, then the peer that writes to it."""
from __future__ import annotations

import socket

from drivers import tcp_rx_stamp


def stamped_pair() -> tuple[tcp_rx_stamp.StampedSocket, socket.socket]:
    with socket.create_server(("127.0.0.1", 0)) as srv:
        (info,) = socket.getaddrinfo(*srv.getsockname(), type=socket.SOCK_STREAM)
        client = tcp_rx_stamp.stamped_socket(info)
        client.connect(srv.getsockname())
        peer, _ = srv.accept()
    return client, peer
