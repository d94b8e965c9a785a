"""A real Airflow stack for end-to-end tests, on fresh databases of the session's PostgreSQL."""

from __future__ import annotations

import re
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest

from devstack.airflow import AirflowStack
from devstack.browser import chromium
from devstack.browser import signed_in_page as sign_in
from devstack.metadata import run_tries_query
from devstack.smtp import SmtpSink
from tests.conftest import REPO, running_airflow


class StatsdListener:
    """Collects the StatsD lines sent to a UDP port on loopback."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.5)
        self.port = self.sock.getsockname()[1]
        self.lines: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data, _ = self.sock.recvfrom(65535)
            except TimeoutError:
                continue
            self.lines.extend(data.decode("utf-8", "replace").splitlines())

    def counters(self, prefix: str) -> dict[str, int]:
        totals: dict[str, int] = {}
        for line in list(self.lines):
            name, _, rest = line.partition(":")
            if name.startswith(prefix) and rest.endswith("|c"):
                totals[name] = totals.get(name, 0) + int(float(rest.split("|")[0]))
        return totals

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()


class E2E:
    """The running stack plus its provider database and StatsD listener."""

    def __init__(
        self, stack: AirflowStack, provider_dsn: str, metadata_dsn: str, statsd: StatsdListener, pid_dir: Path
    ) -> None:
        self.stack = stack
        self.provider_dsn = provider_dsn
        self.metadata_dsn = metadata_dsn
        self.statsd = statsd
        self.pid_dir = pid_dir

    def trigger(self, dag_id: str) -> dict[str, Any]:
        """Unpause ``dag_id`` and start a run whose logical date is now (so it has a data interval)."""
        self.stack.wait_for_dag(dag_id)
        self.stack.api("PATCH", f"/api/v2/dags/{dag_id}", json={"is_paused": False})
        body = {
            "logical_date": datetime.now(timezone.utc).isoformat(),
            "dag_run_id": f"e2e__{uuid.uuid4().hex[:10]}",
        }
        return dict(self.stack.api("POST", f"/api/v2/dags/{dag_id}/dagRuns", json=body))

    def wait(self, run: dict[str, Any], timeout: float = 300) -> dict[str, Any]:
        return self.stack.wait_for_run(run["dag_id"], run["dag_run_id"], timeout=timeout)

    def letters(self, dag_id: str) -> dict[str, dict[str, Any]]:
        with psycopg.connect(self.provider_dsn) as conn:
            cur = conn.execute("SELECT * FROM retry_dead_letters WHERE dag_id = %s", (dag_id,))
            names = [c.name for c in cur.description]
            return {row[names.index("task_id")]: dict(zip(names, row, strict=True)) for row in cur.fetchall()}

    def tries(self, run: dict[str, Any], task_id: str) -> list[dict[str, Any]]:
        """Every try of a task instance from Airflow's metadata database, oldest first."""
        with psycopg.connect(self.metadata_dsn) as conn:
            rows = run_tries_query(conn, run["dag_id"], run["dag_run_id"])
        fields = ("try_number", "state", "start_date", "end_date", "retry_delay_override", "retry_reason")
        return [{name: row[name] for name in fields} for row in rows if row["task_id"] == task_id]


# What the modules on the shared stack need of it: StatsD (scenarios) and a replay driver that
# leases for 15 s and looks every 2 s, at 60 clears a minute (replay_jobs).
SHARED_ENV = {
    "AIRFLOW__METRICS__STATSD_ON": "True",
    "AIRFLOW__METRICS__STATSD_HOST": "127.0.0.1",
    "AIRFLOW__METRICS__STATSD_PREFIX": "airflow",
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "60",
    "AIRFLOW__RETRY_PROVIDER__REPLAY_RATE_PER_MINUTE": "60",
    "AIRFLOW__RETRY_PROVIDER__REPLAY_LEASE_SECONDS": "15",
    "AIRFLOW__RETRY_PROVIDER__REPLAY_DRIVER_INTERVAL_SECONDS": "2",
}


@pytest.fixture(scope="package")
def e2e(pg_server, tmp_path_factory) -> Iterator[E2E]:
    """One real Airflow (scheduler, dag-processor, api-server, triggerer) shared by the e2e modules.

    Starting a stack costs tens of seconds, so every module that needs no configuration of its own
    uses this one (a module with its own settings, users or DAG bundles starts its own with
    ``running_airflow``). Its tests stay independent: each makes its own DAG runs and letters and
    looks only at those.
    """
    statsd = StatsdListener()
    pid_dir = tmp_path_factory.mktemp("pids")
    extra_env = {**SHARED_ENV, "AIRFLOW__METRICS__STATSD_PORT": str(statsd.port), "E2E_PID_DIR": str(pid_dir)}
    try:
        with running_airflow(
            pg_server, tmp_path_factory.mktemp("airflow-home"), "e2e", extra_env=extra_env
        ) as airflow:
            yield E2E(airflow.stack, airflow.provider_dsn, airflow.metadata_dsn, statsd, pid_dir)
    finally:
        statsd.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the e2e tests on the shared stack last among the e2e tests, one module after the other.

    The shared stack is then started once and stopped after the last e2e test, and no stack of a
    module runs beside it (a stack takes CPU even when idle, on a 2-core machine). Under
    ``make test`` one pytest-xdist worker runs the whole layer in this order (tests/parallel.py).
    """
    here = Path(__file__).parent
    places = [i for i, item in enumerate(items) if here in item.path.parents]
    ordered = sorted((items[i] for i in places), key=lambda item: "e2e" in item.fixturenames)
    for place, item in zip(places, ordered, strict=True):
        items[place] = item


@pytest.fixture(scope="module")
def smtp() -> Iterator[SmtpSink]:
    """An SMTP server on loopback that keeps every message (a module's stack sends its alerts there)."""
    sink = SmtpSink().start()
    yield sink
    sink.stop()


def sample_until(predicate, timeout: float = 120, every: float = 0.5) -> None:
    """Poll ``predicate`` until it is true."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(every)
    raise TimeoutError("condition not met in time")


ARTIFACTS = REPO / "tests" / "artifacts"  # screenshots of the browser tests


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Debian Chromium through Playwright, with a fresh profile; closed at the end.

    An assertion on a page waits up to 30 s (Playwright's default is 5 s), the time a page of a
    stack on a loaded 2-core machine may take, as the pages' own actions do (``signed_in_page``).
    """
    from playwright.sync_api import expect

    expect.set_options(timeout=30_000)
    with chromium() as context:
        yield context


def signed_in_page(browser: Any, base_url: str) -> Any:
    """A new page signed in on Airflow's own login page as the admin."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return sign_in(browser, base_url)


def open_from_browse_menu(page: Any, item: str, path: str) -> None:
    """Browse > ``item`` in Airflow's nav, then wait for the plugin page at ``path``."""
    page.get_by_role("button", name=re.compile("Browse")).click()
    page.get_by_role("menuitem", name=item).click()
    page.wait_for_url(re.compile(path))
