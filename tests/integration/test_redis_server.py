"""The dev stack's throwaway Redis: a free loopback port, an unprivileged user, nothing left behind."""

from __future__ import annotations

import os

import psutil

from devstack.redis import start_redis


def test_redis_starts_answers_and_stops_without_a_trace():
    """start_redis serves PING on loopback (as nobody when root); stop ends it and removes its directory."""
    server = start_redis()
    try:
        assert server.ping()
        assert server.url == f"redis://127.0.0.1:{server.port}/0"
        process = psutil.Process(server.process.pid)
        assert process.username() == ("nobody" if os.geteuid() == 0 else psutil.Process().username())
        listening = {conn.laddr for conn in process.net_connections() if conn.status == psutil.CONN_LISTEN}
        assert {(addr.ip, addr.port) for addr in listening} == {("127.0.0.1", server.port)}
    finally:
        server.stop()
    assert not server.ping()
    assert (
        not psutil.pid_exists(server.process.pid) or psutil.Process(server.process.pid).status() == "zombie"
    )
    assert not server.workdir.exists()
