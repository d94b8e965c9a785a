"""A throwaway PostgreSQL cluster from the local binaries, or an existing server from a DSN."""

from __future__ import annotations

import glob
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit

DSN_ENV = "AIRFLOW_RETRY_PG_DSN"
MISSING_BINARIES = (
    "PostgreSQL server binaries (initdb, postgres) not found: install them "
    "(apt-get install postgresql / brew install postgresql), set AIRFLOW_RETRY_PG_DSN "
    "to a server you own, or use `docker compose up`."
)


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL binaries and no DSN: nothing to run the stack on."""


def find_binary(name: str) -> str:
    """Return the path of a PostgreSQL server binary (PATH first, then Debian's layout)."""
    found = shutil.which(name)
    if found:
        return found
    for candidate in sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True):
        return candidate
    raise PostgresUnavailable(MISSING_BINARIES)


EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LISTEN_PORTS_FROM = 10_000


def free_port() -> int:
    """A free TCP port on loopback for a server we start a little later.

    It is taken below the kernel's ephemeral range: a port from that range (what binding to port 0
    gives) may be taken by any outgoing connection before our server binds it, and the test suite
    opens many. Falls back to port 0 where the range is unknown or leaves no room below it.
    """
    low = LISTEN_PORTS_FROM
    if EPHEMERAL_RANGE.exists():
        low = int(EPHEMERAL_RANGE.read_text().split()[0])
    for _ in range(100) if low > LISTEN_PORTS_FROM else ():
        port = random.randrange(LISTEN_PORTS_FROM, low)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PostgresServer:
    """A PostgreSQL server we can create databases on."""

    host: str
    port: int
    user: str
    password: str = ""
    admin_db: str = "postgres"
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    workdir: Path | None = None
    command: list[str] = field(default_factory=list, repr=False)  # how start_cluster started it
    run_as: str | None = None

    def dsn(self, dbname: str | None = None) -> str:
        """A libpq URI for ``dbname`` (the admin database by default)."""
        auth = quote(self.user, safe="")
        if self.password:
            auth += ":" + quote(self.password, safe="")
        return f"postgresql://{auth}@{self.host}:{self.port}/{dbname or self.admin_db}"

    def sqlalchemy_url(self, dbname: str) -> str:
        """The same URI for SQLAlchemy with the psycopg2 driver Airflow uses."""
        return self.dsn(dbname).replace("postgresql://", "postgresql+psycopg2://", 1)

    def connect(self, dbname: str | None = None, autocommit: bool = True):  # noqa: ANN201
        import psycopg

        return psycopg.connect(self.dsn(dbname), autocommit=autocommit)

    def create_database(self, name: str, template: str | None = None, replace: bool = True) -> str:
        """Create ``name`` (dropping it first when ``replace``); return its DSN."""
        from psycopg import sql

        with self.connect() as conn:
            if replace:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
            if template:
                stmt = sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                    sql.Identifier(name), sql.Identifier(template)
                )
            else:
                stmt = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
            conn.execute(stmt)
        return self.dsn(name)

    def drop_database(self, name: str) -> None:
        from psycopg import sql

        with self.connect() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

    def halt(self) -> None:
        """Stop a cluster we started (fast shutdown: its clients are cut off, new ones refused), keeping
        its files for :meth:`resume`."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)  # PostgreSQL's "fast" shutdown
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)

    def resume(self, timeout: float = 60) -> None:
        """Start a cluster :meth:`halt` stopped again, on the same port and data, and wait until it answers."""
        if not self.command or self.workdir is None:
            raise RuntimeError("resume: only a cluster start_cluster started can be started again")
        log = open(self.workdir / "postgres.log", "ab")  # noqa: SIM115 - owned by the server process
        self.process = subprocess.Popen(
            self.command,
            user=self.run_as,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=self.workdir,
        )
        log.close()
        _wait_ready(self, timeout)

    def stop(self) -> None:
        """Stop a cluster we started (fast shutdown) and remove its files; no-op for a DSN server."""
        self.halt()
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None


def from_dsn(dsn: str) -> PostgresServer:
    """Describe an existing server from a libpq URI (its database is used as the admin database)."""
    parts = urlsplit(dsn)
    if parts.scheme not in {"postgresql", "postgres"} or not parts.hostname:
        raise ValueError(
            f"{DSN_ENV}: expected postgresql://user:password@host:port/db, got scheme {parts.scheme!r}"
        )
    return PostgresServer(
        host=parts.hostname,
        port=parts.port or 5432,
        user=parts.username or "postgres",
        password=parts.password or "",
        admin_db=(parts.path.lstrip("/") or "postgres"),
    )


def _run_as() -> str | None:
    """initdb refuses root: run the cluster as the unprivileged postgres user (or nobody)."""
    if os.geteuid() != 0:
        return None
    for user in ("postgres", "nobody"):
        try:
            import pwd

            pwd.getpwnam(user)
            return user
        except KeyError:
            continue
    raise PostgresUnavailable("running as root and neither a 'postgres' nor a 'nobody' user exists")


def start_cluster(parent: str | os.PathLike[str] | None = None, timeout: float = 60) -> PostgresServer:
    """initdb + postgres in a fresh temporary directory on a free loopback port."""
    initdb, postgres = find_binary("initdb"), find_binary("postgres")
    user = _run_as()
    workdir = Path(tempfile.mkdtemp(prefix="arp-pg-", dir=parent))
    if user:
        shutil.chown(workdir, user=user)
    data = workdir / "data"
    subprocess.run(
        [initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8"],
        check=True,
        user=user,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=workdir,
    )
    port = free_port()
    options = {
        "listen_addresses": "127.0.0.1",
        "port": str(port),
        "unix_socket_directories": str(workdir),
        "max_connections": "300",
        "fsync": "off",
        "synchronous_commit": "off",
        "full_page_writes": "off",
        "shared_buffers": "256MB",
    }
    command = [postgres, "-D", str(data)]
    for key, value in options.items():
        command += ["-c", f"{key}={value}"]
    log = open(workdir / "postgres.log", "ab")  # noqa: SIM115 - owned by the server process
    process = subprocess.Popen(
        command, user=user, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=workdir
    )
    log.close()
    server = PostgresServer(
        host="127.0.0.1",
        port=port,
        user="postgres",
        process=process,
        workdir=workdir,
        command=command,
        run_as=user,
    )
    _wait_ready(server, timeout)
    return server


def _wait_ready(server: PostgresServer, timeout: float) -> None:
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        if server.process is not None and server.process.poll() is not None:
            log = (server.workdir / "postgres.log").read_text() if server.workdir else ""
            raise PostgresUnavailable(f"postgres exited with {server.process.returncode}: {log[-2000:]}")
        try:
            psycopg.connect(server.dsn(), connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                server.stop()
                raise
            time.sleep(0.1)


def server_from_env_or_start(parent: str | os.PathLike[str] | None = None) -> PostgresServer:
    """The server named by AIRFLOW_RETRY_PG_DSN, or a new throwaway cluster."""
    dsn = os.environ.get(DSN_ENV)
    if dsn:
        return from_dsn(dsn)
    return start_cluster(parent)
