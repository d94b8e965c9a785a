"""Ports for the servers the dev stack starts: never from the range outgoing connections draw on."""

from __future__ import annotations

import socket

from devstack.postgres import EPHEMERAL_RANGE, LISTEN_PORTS_FROM, free_port


def test_free_ports_lie_below_the_ephemeral_range_and_can_be_bound():
    """Every port handed out is at or above LISTEN_PORTS_FROM, below the ephemeral range, and bindable."""
    assert EPHEMERAL_RANGE.exists(), "this test needs Linux's ip_local_port_range"
    low = int(EPHEMERAL_RANGE.read_text().split()[0])
    assert low > LISTEN_PORTS_FROM, f"ephemeral range starts at {low}: no room below it on this host"
    for _ in range(20):
        port = free_port()
        assert LISTEN_PORTS_FROM <= port < low
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", port))  # free when handed out


def test_a_port_in_use_is_not_handed_out():
    """A port another socket is listening on is never returned."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", free_port()))
        taken.listen()
        used = taken.getsockname()[1]
        assert all(free_port() != used for _ in range(200))
