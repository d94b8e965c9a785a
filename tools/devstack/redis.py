"""A throwaway Redis (Debian's ``redis-server``) for the CeleryExecutor's broker.

Started on a free loopback port in a temporary directory, as an unprivileged user when we run
as root, with persistence off; ``stop()`` ends its process group and removes the directory.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from devstack.postgres import free_port

MISSING_REDIS = (
    "redis-server not found: install it (apt-get install redis-server / brew install redis) "
    "to run the CeleryExecutor stack."
)


class RedisUnavailable(RuntimeError):
    """No redis-server binary, or it did not start."""


@dataclass
class RedisServer:
    """One running redis-server we started."""

    port: int
    workdir: Path
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def ping(self) -> bool:
        """True when the server answers PING with PONG."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        """Stop the server (its whole process group) and remove its directory."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        shutil.rmtree(self.workdir, ignore_errors=True)


def _run_as() -> str | None:
    """Redis need not run as root: use ``nobody`` when we are root."""
    return "nobody" if os.geteuid() == 0 else None


def start_redis(parent: str | os.PathLike[str] | None = None, timeout: float = 30) -> RedisServer:
    """Start ``redis-server`` on a free loopback port (no persistence) and wait until it answers.

    ``parent`` (default: the system temp directory) must be reachable by ``nobody`` when we are root.
    """
    binary = shutil.which("redis-server") or next(
        (path for path in ("/usr/bin/redis-server", "/usr/sbin/redis-server") if os.path.exists(path)), None
    )
    if binary is None:
        raise RedisUnavailable(MISSING_REDIS)
    user = _run_as()
    workdir = Path(tempfile.mkdtemp(prefix="arp-redis-", dir=parent))
    if user:
        shutil.chown(workdir, user=user)
    port = free_port()
    command = [
        binary,
        "--bind", "127.0.0.1",
        "--port", str(port),
        "--dir", str(workdir),
        "--save", "",
        "--appendonly", "no",
        "--protected-mode", "yes",
        "--daemonize", "no",
    ]  # fmt: skip
    log = open(workdir / "redis.log", "ab")  # noqa: SIM115 - owned by the server process
    process = subprocess.Popen(
        command, user=user, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=workdir
    )
    log.close()
    server = RedisServer(port=port, workdir=workdir, process=process)
    deadline = time.monotonic() + timeout
    while not server.ping():
        if process.poll() is not None or time.monotonic() > deadline:
            output = (workdir / "redis.log").read_text(errors="replace")[-2000:]
            server.stop()
            raise RedisUnavailable(f"redis-server did not start on port {port}: {output}")
        time.sleep(0.1)
    return server
