"""The replay loop under faults, in a real Airflow: every letter ends as the state tables say.

One stack of its own serves the module. Its replay driver (in the api-server) and the sweeper
reach Airflow's REST API through :class:`FaultProxy`, which passes requests through until a test
makes it answer 500; the tests themselves talk to Airflow directly. The provider's database
"restarts" by refusing connections and losing every open one (Airflow's metadata database, on the
same server, keeps running, as it would on a server of its own).
"""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import psycopg
import pytest
from psycopg import sql

from airflow_retry_provider.dlq.models import Letter
from airflow_retry_provider.dlq.replay import ReplayEngine, ReplayRequest
from airflow_retry_provider.dlq.store import DeadLetterStore, LetterFilter
from airflow_retry_provider.dlq.sweeper import run_sweeper
from airflow_retry_provider.hooks.airflow_api import AirflowApi, ApiCredentials
from devstack.airflow import ADMIN_PASSWORD, ADMIN_USER, AirflowStack
from devstack.postgres import PostgresServer, free_port
from tests.conftest import running_airflow
from tests.dag_files.fault_dags import EXTRACT_BROKEN, PARTS, PARTS_FIXED
from tests.one_by_one import sweep

pytestmark = pytest.mark.e2e

UPSTREAM_DAG = "fault_upstream_again"
PARTS_DAG = "fault_parts"
UNMANAGED_DAG = "fault_unmanaged"
PREFIX = "/retry-provider"
SETTLED = {"dlq", "resolved", "parked", "dismissed"}


class FaultProxy:
    """An HTTP proxy to Airflow's API that passes every request through, or answers 500 while ``failing``."""

    def __init__(self, port: int) -> None:
        proxy = self
        self.target: str | None = None
        self.failing = threading.Event()
        self.refused = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                if proxy.failing.is_set() or proxy.target is None:
                    proxy.refused += 1
                    self._answer(
                        500, b'{"detail": "Internal Server Error (fault proxy)"}', "application/json"
                    )
                    return
                headers = {
                    k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")
                }
                answer = httpx.request(
                    self.command, proxy.target + self.path, headers=headers, content=body, timeout=120
                )
                self._answer(answer.status_code, answer.content, answer.headers.get("content-type"))

            def _answer(self, status: int, content: bytes, content_type: str | None) -> None:
                self.send_response(status)
                if content_type:
                    self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _forward

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Faults:
    """The stack, its provider database, the proxy, and the calls the tests make."""

    def __init__(
        self,
        stack: AirflowStack,
        server: PostgresServer,
        provider_db: str,
        provider_dsn: str,
        proxy: FaultProxy,
    ):
        self.stack = stack
        self.server = server
        self.provider_db = provider_db
        self.provider_dsn = provider_dsn
        self.proxy = proxy
        self.store = DeadLetterStore.from_dsn(provider_dsn)

    def api(self) -> AirflowApi:
        """Airflow's API, directly (not through the proxy)."""
        return AirflowApi(ApiCredentials(self.stack.base_url, ADMIN_USER, ADMIN_PASSWORD), timeout=60)

    def set_variable(self, key: str, value: str) -> None:
        try:
            self.stack.api("PATCH", f"/api/v2/variables/{key}", json={"key": key, "value": value})
        except RuntimeError:
            self.stack.api("POST", "/api/v2/variables", json={"key": key, "value": value})

    def failed_run(self, dag_id: str) -> str:
        """A new run of ``dag_id``, finished ``failed``: its run id."""
        self.stack.wait_for_dag(dag_id)
        self.stack.api("PATCH", f"/api/v2/dags/{dag_id}", json={"is_paused": False})
        run = self.stack.api("POST", f"/api/v2/dags/{dag_id}/dagRuns", json={"logical_date": None})
        run_id = str(run["dag_run_id"])
        assert self.stack.wait_for_run(dag_id, run_id, timeout=300)["state"] == "failed"
        return run_id

    def ti(self, dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
        return dict(self.stack.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}"))

    def letters(self, dag_id: str, run_id: str, count: int, timeout: float = 90) -> list[Letter]:
        """The run's letters, once there are ``count`` of them (callbacks file them as tasks end)."""
        deadline = time.monotonic() + timeout
        while True:
            found = [lt for lt in self.store.list(LetterFilter(dag_id=dag_id)) if lt.run_id == run_id]
            if len(found) >= count or time.monotonic() > deadline:
                assert len(found) == count, [(lt.task_id, lt.status) for lt in found]
                return sorted(found, key=lambda lt: lt.task_id)
            time.sleep(1)

    def plugin(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.request(
            method,
            f"{self.stack.base_url}{PREFIX}{path}",
            headers={"Authorization": f"Bearer {self.stack.token()}"},
            timeout=60,
            **kwargs,
        )

    def wait_job(self, job_id: int, timeout: float = 300) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        job: dict[str, Any] = {}
        while time.monotonic() < deadline:
            job = self.plugin("GET", f"/api/jobs/{job_id}").json()
            if job["finished"]:
                return job
            time.sleep(1)
        raise AssertionError(f"job {job_id} did not finish in {timeout} s: {job}")

    def sent(self, job_id: int) -> int:
        with psycopg.connect(self.provider_dsn) as conn:
            (count,) = conn.execute(  # type: ignore[misc]
                "SELECT count(*) FROM retry_replays WHERE job_id = %s AND clear_sent_at IS NOT NULL",
                (job_id,),
            ).fetchone()
        return int(count)

    def database_down(self) -> None:
        """The provider's database goes away: new connections refused, open ones lost."""
        name = sql.Identifier(self.provider_db)
        with self.server.connect() as admin:
            admin.execute(sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS false").format(name))
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (self.provider_db,),
            )

    def database_up(self) -> None:
        name = sql.Identifier(self.provider_db)
        with self.server.connect() as admin:
            admin.execute(sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS true").format(name))

    def settle(self, sweeps: int = 2, timeout: float = 240) -> None:
        """The faults have stopped: ``sweeps`` sweeps run (sync, resolve, drain), as the sweeper DAG's
        would, then more while a replayed try is still running (a loaded machine runs it late), at most
        ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        done = 0
        while done < sweeps or (self._replaying() and time.monotonic() < deadline):
            if done >= sweeps:
                time.sleep(2)
            with self.api() as api:
                run_sweeper(self.store, api, grace=timedelta(0), drain_seconds=60)
            done += 1

    def _replaying(self) -> bool:
        """Whether a letter still waits for its replayed try."""
        with psycopg.connect(self.provider_dsn) as conn:
            row = conn.execute(
                "SELECT count(*) FROM retry_dead_letters WHERE status = 'replaying'"
            ).fetchone()
        return bool(row and row[0])


def job_items(provider_dsn: str, job_id: int) -> list[tuple[int, str, int | None]]:
    with psycopg.connect(provider_dsn) as conn:
        rows = conn.execute(
            "SELECT letter_id, outcome, replay_id FROM retry_replay_job_items WHERE job_id = %s ORDER BY position",
            (job_id,),
        ).fetchall()
    return [(int(a), str(b), c) for a, b, c in rows]


def assert_loop_settled(faults: Faults, letters: list[Letter]) -> None:
    """What the state tables promise once the faults stop: no letter replaying, no job running, counts add up."""
    statuses = {lt.id: faults.store.get(lt.id).status for lt in letters}  # type: ignore[union-attr]
    unsettled = {  # what Airflow says of each letter still unsettled, to read a failure by
        lt.id: (lt.task_id, faults.ti(lt.dag_id, lt.run_id, lt.task_id))
        for lt in letters
        if statuses[lt.id] not in SETTLED
    }
    assert set(statuses.values()) <= SETTLED, (statuses, unsettled)
    with psycopg.connect(faults.provider_dsn) as conn:
        running = conn.execute(
            "SELECT id, status FROM retry_replay_jobs WHERE status IN ('queued', 'running')"
        ).fetchall()
        pending = conn.execute(
            "SELECT letter_id, outcome FROM retry_replays WHERE outcome IN ('pending', 'unknown')"
        ).fetchall()
    assert running == [] and pending == [], (running, pending)


@pytest.fixture(scope="module")
def faults(pg_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Faults]:
    proxy = FaultProxy(free_port())
    api_port = free_port()
    extra_env = {
        # the driver and the sweeper reach Airflow through the proxy; the tasks do not
        "AIRFLOW_CONN_RETRY_PROVIDER_AIRFLOW_API": f"http://{ADMIN_USER}:{ADMIN_PASSWORD}@{proxy.url.removeprefix('http://')}",
        "AIRFLOW__RETRY_PROVIDER__REPLAY_RATE_PER_MINUTE": "60",
        "AIRFLOW__RETRY_PROVIDER__REPLAY_LEASE_SECONDS": "30",
        "AIRFLOW__RETRY_PROVIDER__REPLAY_DRIVER_INTERVAL_SECONDS": "2",
        "AIRFLOW__RETRY_PROVIDER__SWEEP_GRACE_SECONDS": "0",
    }
    try:
        with running_airflow(
            pg_server,
            tmp_path_factory.mktemp("faults-airflow-home"),
            "faults",
            extra_env=extra_env,
            stack_options={"api_port": api_port},
        ) as airflow:
            proxy.target = airflow.stack.base_url
            yield Faults(airflow.stack, pg_server, airflow.provider_db, airflow.provider_dsn, proxy)
    finally:
        proxy.close()


def test_a_replayed_task_whose_upstream_fails_again_does_not_stay_replaying(faults: Faults):
    """load's clear is confirmed, then its upstream fails again: load ends upstream_failed and its letter leaves replaying."""
    faults.set_variable(EXTRACT_BROKEN, "no")
    run_id = faults.failed_run(UPSTREAM_DAG)
    (letter,) = faults.letters(UPSTREAM_DAG, run_id, 1)
    assert (letter.task_id, letter.status) == ("load", "dlq")

    faults.stack.api("PATCH", f"/api/v2/dags/{UPSTREAM_DAG}", json={"is_paused": True})
    with faults.api() as api:
        engine = ReplayEngine(faults.store, api, replay_cap=3, rate_per_minute=60)
        request = ReplayRequest("ana", "target table created", "v2", downstream=False)
        replay_id = engine.claim(letter, request)
        assert replay_id is not None
        assert engine.clear(api, letter, replay_id, request).outcome == "cleared"
    assert faults.store.get(letter.id).status == "replaying"  # type: ignore[union-attr]

    # before load runs again, someone reruns extract and the source has broken meanwhile
    faults.set_variable(EXTRACT_BROKEN, "yes")
    body = {
        "dry_run": False,
        "dag_run_id": run_id,
        "task_ids": ["extract"],
        "only_failed": False,
        "include_downstream": False,
        "include_upstream": False,
        "reset_dag_runs": True,
    }
    faults.stack.api("POST", f"/api/v2/dags/{UPSTREAM_DAG}/clearTaskInstances", json=body)
    faults.stack.api("PATCH", f"/api/v2/dags/{UPSTREAM_DAG}", json={"is_paused": False})
    assert faults.stack.wait_for_run(UPSTREAM_DAG, run_id, timeout=300)["state"] == "failed"
    assert faults.ti(UPSTREAM_DAG, run_id, "extract")["state"] == "failed"
    assert faults.ti(UPSTREAM_DAG, run_id, "load")["state"] == "upstream_failed"

    faults.settle()
    after = faults.store.get(letter.id)
    assert after is not None and after.status in ("dlq", "parked"), after.status
    (replay,) = faults.store.replays(letter.id)
    assert replay.outcome not in ("pending", "unknown"), replay.outcome
    extract_letter = [lt for lt in faults.letters(UPSTREAM_DAG, run_id, 2) if lt.task_id == "extract"]
    assert [lt.status for lt in extract_letter] == ["dlq"]  # the new root cause has its own letter
    assert_loop_settled(faults, [letter])


def test_a_job_while_airflow_answers_500_for_a_minute_ends_as_the_state_tables_say(faults: Faults):
    """Eight letters in a job; Airflow's API answers the driver 500 for 60 s mid-job: none cleared twice, none stuck, none lost."""
    faults.set_variable(PARTS_FIXED, "no")
    run_id = faults.failed_run(PARTS_DAG)
    letters = faults.letters(PARTS_DAG, run_id, PARTS)
    faults.set_variable(PARTS_FIXED, "yes")
    body = {
        "ids": [lt.id for lt in letters],
        "reason": "parts table created",
        "fix_version": "v2",
        "canary": False,
    }
    response = faults.plugin("POST", "/api/replays", json=body)
    assert response.status_code in (200, 201, 202), response.text
    job_id = int(response.json()["id"])

    deadline = time.monotonic() + 120
    while faults.sent(job_id) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert faults.sent(job_id) >= 2
    faults.proxy.failing.set()
    try:
        time.sleep(60)
    finally:
        faults.proxy.failing.clear()
    assert faults.proxy.refused > 0  # the driver did call Airflow during the outage

    job = faults.wait_job(job_id)
    assert sum(job["counts"].values()) == PARTS, job["counts"]
    faults.settle()
    assert_loop_settled(faults, letters)
    for lt in letters:
        ti = faults.ti(PARTS_DAG, run_id, lt.task_id)
        assert ti["try_number"] <= 2, (lt.task_id, ti["try_number"])  # cleared at most once
        now = faults.store.get(lt.id)
        assert now is not None
        if now.status == "resolved":
            assert ti["state"] == "success"
        else:  # not cleared: back in dlq, its replay cap untouched, its history says why
            assert now.status == "dlq" and ti["state"] == "failed" and now.replay_count == 0, now
            assert {e.event for e in faults.store.events(lt.id)} & {"clear-failed", "lease-expired"}


def test_a_job_survives_the_provider_database_going_away_midway(faults: Faults):
    """Eight letters in a job; the provider's database refuses connections for 20 s mid-job: every letter ends resolved or dlq, none cleared twice."""
    faults.set_variable(PARTS_FIXED, "no")
    run_id = faults.failed_run(PARTS_DAG)
    letters = faults.letters(PARTS_DAG, run_id, PARTS)
    faults.set_variable(PARTS_FIXED, "yes")
    body = {
        "ids": [lt.id for lt in letters],
        "reason": "parts table created",
        "fix_version": "v3",
        "canary": False,
    }
    job_id = int(faults.plugin("POST", "/api/replays", json=body).json()["id"])

    deadline = time.monotonic() + 120
    while faults.sent(job_id) < 3 and time.monotonic() < deadline:
        time.sleep(0.2)
    faults.database_down()
    try:
        time.sleep(20)
    finally:
        faults.database_up()

    faults.wait_job(job_id)
    faults.settle()
    assert_loop_settled(faults, letters)
    items = job_items(faults.provider_dsn, job_id)
    assert len(items) == PARTS and all(outcome != "pending" for _, outcome, _ in items), items
    for lt in letters:
        ti = faults.ti(PARTS_DAG, run_id, lt.task_id)
        assert ti["try_number"] <= 2, (lt.task_id, ti["try_number"])
        status = faults.store.get(lt.id).status  # type: ignore[union-attr]
        assert (status, ti["state"]) in (("resolved", "success"), ("dlq", "failed")), (
            lt.task_id,
            status,
            ti["state"],
        )


def test_a_sweep_with_the_database_going_away_midway_files_every_failure_once_afterwards(faults: Faults):
    """A sweep loses the provider's database half-way: it reports errors; the next sweep files the rest, one letter per failure."""
    run_id = faults.failed_run(UNMANAGED_DAG)
    with psycopg.connect(
        faults.provider_dsn, autocommit=True
    ) as conn:  # each filing takes 0.5 s, so the sweep is long enough to break
        conn.execute(SLOW_FILING)
    reports: list[Any] = []
    try:
        with faults.api() as api:
            thread = threading.Thread(
                target=lambda: reports.append(
                    sweep(faults.store, api, [UNMANAGED_DAG], replay_cap=3, grace=timedelta(0))
                )
            )
            thread.start()
            deadline = time.monotonic() + 60
            while count_letters(faults, run_id) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            faults.database_down()
            thread.join(120)
    finally:
        faults.database_up()
        with psycopg.connect(faults.provider_dsn, autocommit=True) as conn:
            conn.execute("DROP TRIGGER IF EXISTS fault_slow_filing ON retry_dead_letters")
    (first,) = reports
    assert first.errors and 2 <= len(first.filed) < PARTS, first  # it lost the database part-way

    with faults.api() as api:
        second = sweep(faults.store, api, [UNMANAGED_DAG], replay_cap=3, grace=timedelta(0))
    assert second.errors == () and len(first.filed) + len(second.filed) == PARTS, second
    with psycopg.connect(faults.provider_dsn) as conn:
        rows = conn.execute(
            "SELECT task_id, count(*) FROM retry_dead_letters WHERE dag_id = %s AND run_id = %s GROUP BY task_id",
            (UNMANAGED_DAG, run_id),
        ).fetchall()
    assert sorted(rows) == [(f"unfiled_{n}", 1) for n in range(PARTS)]


SLOW_FILING = """
CREATE OR REPLACE FUNCTION fault_slow_filing() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_sleep(0.5); RETURN NEW; END $$;
DROP TRIGGER IF EXISTS fault_slow_filing ON retry_dead_letters;
CREATE TRIGGER fault_slow_filing BEFORE INSERT ON retry_dead_letters FOR EACH ROW EXECUTE FUNCTION fault_slow_filing();
"""


def count_letters(faults: Faults, run_id: str) -> int:
    try:
        with psycopg.connect(faults.provider_dsn) as conn:
            (count,) = conn.execute(  # type: ignore[misc]
                "SELECT count(*) FROM retry_dead_letters WHERE run_id = %s", (run_id,)
            ).fetchone()
        return int(count)
    except psycopg.OperationalError:
        return -1
