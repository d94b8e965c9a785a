"""Ports for the servers the dev stack starts: never from the range outgoing connections draw on."""

from __future__ import annotations

import socket

from airflow_retry_provider.devstack.postgres import EPHEMERAL_RANGE, LISTEN_PORTS_FROM, free_port


def test_free_ports_lie_below_the_ephemeral_range_and_can_be_bound():
    low = int(EPHEMERAL_RANGE.read_text().split()[0]) if EPHEMERAL_RANGE.exists() else 65536
    for _ in range(20):
        port = free_port()
        assert LISTEN_PORTS_FROM <= port < low or low <= LISTEN_PORTS_FROM
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", port))  # free when handed out


def test_a_port_in_use_is_not_handed_out():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", free_port()))
        taken.listen()
        used = taken.getsockname()[1]
        assert all(free_port() != used for _ in range(200))
