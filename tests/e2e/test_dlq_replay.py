"""The acceptance fixture in a real Airflow: dead letters, manual replays to the cap, a fix, and the sweeper.

One stack (scheduler, dag-processor, api-server, triggerer; LocalExecutor) serves the whole
module; its metadata and provider databases are fresh databases on the session's PostgreSQL.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from psycopg import sql

from airflow_retry_provider.cli import main
from airflow_retry_provider.devstack.airflow import ADMIN_PASSWORD, ADMIN_USER, AirflowStack
from airflow_retry_provider.devstack.postgres import PostgresServer
from airflow_retry_provider.dlq.airflow_api import AirflowApi, ApiCredentials, TaskInstanceRef
from airflow_retry_provider.dlq.callback import UNFILED_EVENT
from airflow_retry_provider.dlq.models import Letter
from airflow_retry_provider.dlq.replay import ReplayEngine, ReplayRequest
from airflow_retry_provider.dlq.store import DeadLetterStore, LetterFilter
from airflow_retry_provider.dlq.sweeper import SWEEP_VARIABLE, managed_dag_ids, sweep, sweeper_letter
from tests.conftest import running_airflow

pytestmark = pytest.mark.e2e

POISON_DAG = "policy_poison_between_valid"
FIX_DAG = "dlq_fix_by_variable"
PROBE_DAG = "dlq_sweeper_probe"
SWEEPER_DAG = "dead_letter_sweeper"


class Env:
    """The running stack and what the tests need to talk to it."""

    def __init__(self, stack: AirflowStack, server: PostgresServer, provider_db: str, provider_dsn: str):
        self.stack = stack
        self.server = server
        self.provider_db = provider_db
        self.provider_dsn = provider_dsn
        self.store = DeadLetterStore.from_dsn(provider_dsn)
        self.credentials = ApiCredentials(stack.base_url, ADMIN_USER, ADMIN_PASSWORD)

    def engine(self) -> ReplayEngine:
        return ReplayEngine(self.store, AirflowApi(self.credentials), replay_cap=3, rate_per_minute=10)

    def trigger(self, dag_id: str) -> str:
        self.stack.wait_for_dag(dag_id)
        self.stack.api("PATCH", f"/api/v2/dags/{dag_id}", json={"is_paused": False})
        run = self.stack.api("POST", f"/api/v2/dags/{dag_id}/dagRuns", json={"logical_date": None})
        return str(run["dag_run_id"])

    def ti(self, dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
        return dict(self.stack.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}"))

    def tries(self, dag_id: str, run_id: str, task_id: str) -> list[dict[str, Any]]:
        path = f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/tries"
        return list(self.stack.api("GET", path)["task_instances"])

    def wait_ti(self, dag_id: str, run_id: str, task_id: str, state: str, try_number: int) -> dict[str, Any]:
        """Wait until Airflow itself reports the task instance finished (its callback may write first)."""
        deadline = time.monotonic() + 120
        ti = self.ti(dag_id, run_id, task_id)
        while (ti["state"], ti["try_number"]) != (state, try_number) and time.monotonic() < deadline:
            time.sleep(1)
            ti = self.ti(dag_id, run_id, task_id)
        assert (ti["state"], ti["try_number"]) == (state, try_number), ti
        return ti

    def letter_of(self, dag_id: str, task_id: str) -> Letter | None:
        found = self.store.list(LetterFilter(dag_id=dag_id, task_id=task_id))
        assert len(found) <= 1
        return found[0] if found else None

    def wait_letter(self, letter_id: int, check: Callable[[Letter], bool], timeout: float = 150) -> Letter:
        deadline = time.monotonic() + timeout
        letter = self.store.get(letter_id)
        while time.monotonic() < deadline:
            letter = self.store.get(letter_id)
            if letter is not None and check(letter):
                return letter
            time.sleep(1)
        raise AssertionError(f"letter {letter_id} did not reach the expected state: {letter}")

    def set_variable(self, key: str, value: str) -> None:
        try:
            self.stack.api("PATCH", f"/api/v2/variables/{key}", json={"key": key, "value": value})
        except RuntimeError:
            self.stack.api("POST", "/api/v2/variables", json={"key": key, "value": value})


def _ti_ref(dag_id: str, run_id: str, task_id: str) -> TaskInstanceRef:
    return TaskInstanceRef(dag_id, run_id, task_id, -1, "failed", 1)


@pytest.fixture(scope="module")
def env(pg_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    """A real Airflow on fresh databases with tests/dag_files and dags/; stopped at the end of the module."""
    with running_airflow(
        pg_server,
        tmp_path_factory.mktemp("dlq-airflow-home"),
        "dlq",
        extra_env={"AIRFLOW_RETRY_DLQ_SWEEP_GRACE_SECONDS": "0"},
    ) as airflow:
        yield Env(airflow.stack, pg_server, airflow.provider_db, airflow.provider_dsn)


@pytest.fixture(scope="module")
def poison_run(env: Env) -> str:
    """One run of the DAG with an invalid job between two valid ones, finished."""
    run_id = env.trigger(POISON_DAG)
    run = env.stack.wait_for_run(POISON_DAG, run_id, timeout=240)
    assert run["state"] == "failed"
    return run_id


def test_poison_job_reaches_dlq_after_one_execution_between_two_valid_jobs(env: Env, poison_run: str):
    """Both valid jobs succeed; the invalid one ran exactly once and waits in ``dlq``."""
    for task_id in ("valid_before", "valid_after"):
        assert env.ti(POISON_DAG, poison_run, task_id)["state"] == "success"
    invalid = env.ti(POISON_DAG, poison_run, "invalid_job")
    assert (invalid["state"], invalid["try_number"]) == ("failed", 1)
    assert len(env.tries(POISON_DAG, poison_run, "invalid_job")) == 1
    letter = env.wait_letter(env.letter_of(POISON_DAG, "invalid_job").id, lambda lt: True)  # type: ignore[union-attr]
    assert (letter.status, letter.replay_count, letter.try_number) == ("dlq", 0, 1)
    assert (letter.failure_class, letter.category, letter.filed_by) == ("poison", "not-found", "callback")
    assert env.letter_of(POISON_DAG, "valid_before") is None


def test_replays_without_a_fix_return_to_dlq_and_park_at_the_cap(env: Env, poison_run: str):
    """Each replay without a fix runs once and returns to ``dlq``; nothing runs by itself; the third parks it."""
    letter = env.letter_of(POISON_DAG, "invalid_job")
    assert letter is not None
    engine = env.engine()
    preview = engine.preview(ids=[letter.id])
    assert [item.letter.id for item in preview.items] == [letter.id]
    assert [(t.task_id, t.map_index) for t in preview.items[0].instances] == [("invalid_job", -1)]
    assert env.ti(POISON_DAG, poison_run, "invalid_job")["try_number"] == 1  # the dry-run changed nothing
    assert env.store.replays(letter.id) == []

    request = ReplayRequest("ana", "deployed nothing yet", "v1")
    report = engine.replay(request, ids=[letter.id])
    assert report.cleared == [letter.id]
    after_one = env.wait_letter(letter.id, lambda lt: lt.replay_count == 1)
    assert after_one.status == "dlq"
    ti = env.wait_ti(POISON_DAG, poison_run, "invalid_job", "failed", 2)
    assert ti["note"].startswith(f"airflow-retry replay #{report.results[0].replay_id} by ana:")

    time.sleep(30)  # a poison task replayed without a fix never loops by itself
    ti = env.ti(POISON_DAG, poison_run, "invalid_job")
    assert (ti["state"], ti["try_number"]) == ("failed", 2)
    assert env.store.get(letter.id).replay_count == 1  # type: ignore[union-attr]

    code = main(
        [
            "dlq",
            "replay",
            "--id",
            str(letter.id),
            "--actor",
            "bia",
            "--reason",
            "second try",
            "--fix-version",
            "v1",
            "--dsn",
            env.provider_dsn,
            "--api-url",
            env.stack.base_url,
            "--api-user",
            ADMIN_USER,
            "--api-password",
            ADMIN_PASSWORD,
        ]
    )
    assert code == 0
    env.wait_letter(letter.id, lambda lt: lt.replay_count == 2 and lt.status == "dlq")
    env.wait_ti(POISON_DAG, poison_run, "invalid_job", "failed", 3)
    job = _replay_through_plugin(env, letter.id, "third try", "v1")  # as the on-call operator does in the UI
    assert job["actor"] == ADMIN_USER and job["counts"] == {"cleared": 1}
    parked = env.wait_letter(letter.id, lambda lt: lt.replay_count == 3)
    assert parked.status == "parked"
    env.wait_ti(POISON_DAG, poison_run, "invalid_job", "failed", 4)
    assert len(env.tries(POISON_DAG, poison_run, "invalid_job")) == 4

    refused = engine.replay(ReplayRequest("ana", "once more", "v1"), ids=[letter.id])
    assert [r.outcome for r in refused.results] == ["refused"]
    assert engine.preview(ids=[letter.id]).count == 0
    replays = env.store.replays(letter.id)
    assert [r.outcome for r in replays] == ["failed", "failed", "failed"]
    assert sorted(r.actor for r in replays) == sorted(["ana", "bia", ADMIN_USER])
    assert all(r.cleared_at is not None and r.fix_version == "v1" for r in replays)


def test_replay_after_the_fix_resolves_the_letter(env: Env):
    """A task failing until a Variable says the fix is in: a replay after setting it makes the letter resolved."""
    run_id = env.trigger(FIX_DAG)
    assert env.stack.wait_for_run(FIX_DAG, run_id, timeout=240)["state"] == "failed"
    deadline = time.monotonic() + 60
    while (letter := env.letter_of(FIX_DAG, "load_positions")) is None and time.monotonic() < deadline:
        time.sleep(1)
    assert letter is not None and letter.status == "dlq"
    env.wait_ti(FIX_DAG, run_id, "load_positions", "failed", 1)
    env.set_variable("policy_fix_applied", "yes")
    _replay_through_plugin(env, letter.id, "positions_v3 created", "v2", processing_version="p2")
    resolved = env.wait_letter(letter.id, lambda lt: lt.status != "replaying")
    assert (resolved.status, resolved.replay_count) == ("resolved", 0)
    assert env.ti(FIX_DAG, run_id, "load_positions")["state"] == "success"
    (replay,) = env.store.replays(letter.id)
    assert (replay.outcome, replay.fix_version, replay.processing_version) == ("succeeded", "v2", "p2")
    assert resolved.work_unit_key == letter.work_unit_key  # identity is kept; the new version is recorded


def test_sweeper_files_the_letter_once_postgres_is_back(env: Env, poison_run: str):
    """The provider's database refuses connections during the callback: one UNFILED_EVENT, then the sweeper DAG files it."""
    name = sql.Identifier(env.provider_db)
    with env.server.connect() as admin:
        admin.execute(sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS false").format(name))
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (env.provider_db,)
        )
    try:
        run_id = env.trigger(PROBE_DAG)
        assert env.stack.wait_for_run(PROBE_DAG, run_id, timeout=240)["state"] == "failed"
        log_path = f"/api/v2/dags/{PROBE_DAG}/dagRuns/{run_id}/taskInstances/always_poison/logs/1"
        log_text = json.dumps(env.stack.api("GET", log_path, params={"full_content": True}))
    finally:
        with env.server.connect() as admin:
            admin.execute(sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS true").format(name))
    assert log_text.count(UNFILED_EVENT) == 1, log_text[-3000:]
    assert env.letter_of(PROBE_DAG, "always_poison") is None

    # a replay whose success callback never reached the database: the sweeper's outcome sync resolves it
    orphan = env.store.file(sweeper_letter(_ti_ref(POISON_DAG, poison_run, "valid_before"), {}), replay_cap=3)
    env.engine().claim(env.store.get(orphan.letter_id), ReplayRequest("ana", "lost callback", "v1"))  # type: ignore[arg-type]
    env.set_variable(SWEEP_VARIABLE, json.dumps([POISON_DAG]))
    env.stack.wait_for_dag(SWEEPER_DAG)
    env.stack.api("PATCH", f"/api/v2/dags/{SWEEPER_DAG}", json={"is_paused": False})
    deadline = time.monotonic() + 60
    runs: list[dict[str, Any]] = []
    while not runs and time.monotonic() < deadline:
        runs = env.stack.api("GET", f"/api/v2/dags/{SWEEPER_DAG}/dagRuns")["dag_runs"]
        time.sleep(1)
    assert runs, "the sweeper DAG was not scheduled when unpaused"
    assert env.stack.wait_for_run(SWEEPER_DAG, runs[0]["dag_run_id"], timeout=240)["state"] == "success"

    letter = env.letter_of(PROBE_DAG, "always_poison")
    assert letter is not None
    assert (letter.status, letter.category, letter.failure_class, letter.rule, letter.filed_by) == (
        "dlq",
        "filed-by-sweeper",
        "unknown",
        "sweeper",
        "sweeper",
    )
    assert (letter.run_id, letter.try_number) == (run_id, 1)
    assert env.store.get(orphan.letter_id).status == "resolved"  # type: ignore[union-attr]
    assert [r.outcome for r in env.store.replays(orphan.letter_id)] == ["succeeded"]

    with AirflowApi(env.credentials) as api:
        dags = managed_dag_ids(api)
        assert {PROBE_DAG, FIX_DAG, POISON_DAG} <= set(dags)
        again = sweep(env.store, api, dags, replay_cap=3, grace=timedelta(0))
    assert again.filed == () and again.covered >= 2  # the probe and the parked poison letter
    with psycopg.connect(env.provider_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM retry_dead_letters").fetchone() == (4,)


def _replay_through_plugin(env: Env, letter_id: int, reason: str, fix_version: str, **extra: str) -> dict:
    """POST the plugin's replay API as the signed-in admin (the acting user comes from the token)."""
    body = {"ids": [letter_id], "reason": reason, "fix_version": fix_version, "actor": "forged", **extra}
    job = env.stack.api("POST", "/retry-provider/api/replays", json=body)
    deadline = time.monotonic() + 120
    while not job["finished"] and time.monotonic() < deadline:
        time.sleep(1)
        job = env.stack.api("GET", f"/retry-provider/api/jobs/{job['id']}")
    assert job["finished"] and job["error"] is None, job
    return dict(job)
