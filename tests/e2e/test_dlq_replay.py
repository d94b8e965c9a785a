"""The acceptance fixture in a real Airflow: dead letters, manual replays to the cap, a fix, and the sweeper.

One stack (scheduler, dag-processor, api-server, triggerer; LocalExecutor) serves the whole
module; its metadata and provider databases are fresh databases on the session's PostgreSQL.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg import sql

from airflow_retry_provider.airflow_compat import one_row_per_try
from airflow_retry_provider.cli import main
from airflow_retry_provider.dlq.callback import UNFILED_EVENT
from airflow_retry_provider.dlq.driver import replay_and_wait
from airflow_retry_provider.dlq.models import Letter
from airflow_retry_provider.dlq.replay import ReplayEngine, ReplayRequest
from airflow_retry_provider.dlq.store import DeadLetterStore, LetterFilter
from airflow_retry_provider.dlq.sweeper import SWEEP_VARIABLE, managed_dag_ids, sweeper_letter
from airflow_retry_provider.hooks.airflow_api import AirflowApi, ApiCredentials, TaskInstanceRef
from devstack.airflow import ADMIN_PASSWORD, ADMIN_USER, AirflowStack
from devstack.postgres import PostgresServer
from tests.conftest import running_airflow
from tests.e2e.conftest import StatsdListener
from tests.factories import new_letter
from tests.one_by_one import failed_task_instances, sweep

pytestmark = pytest.mark.e2e

POISON_DAG = "policy_poison_between_valid"
FIX_DAG = "dlq_fix_by_variable"
PROBE_DAG = "dlq_sweeper_probe"
SWEEPER_DAG = "dead_letter_sweeper"
SWEEP_TARGET_DAG = "dlq_sweep_target"
RUNNING_DAG = "dlq_running_target"
RELEASE_VARIABLE = "dlq_running_target_release"
REMOTE_JOB_DAG = "remote_job_replay"
READER = "reader"


class Env:
    """The running stack and what the tests need to talk to it."""

    def __init__(
        self,
        stack: AirflowStack,
        server: PostgresServer,
        provider_db: str,
        provider_dsn: str,
        statsd: StatsdListener,
    ):
        self.stack = stack
        self.statsd = statsd
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
        deadline = time.monotonic() + 300  # as wait_letter: a replayed try under the suite's load
        ti = self.ti(dag_id, run_id, task_id)
        while (ti["state"], ti["try_number"]) != (state, try_number) and time.monotonic() < deadline:
            time.sleep(1)
            ti = self.ti(dag_id, run_id, task_id)
        assert (ti["state"], ti["try_number"]) == (state, try_number), ti
        return ti

    def scheduler_heartbeat(self) -> datetime | None:
        raw = (self.stack.api("GET", "/api/v2/monitor/health").get("scheduler") or {}).get(
            "latest_scheduler_heartbeat"
        )
        return datetime.fromisoformat(raw) if raw else None

    def wait_scheduler_loops(self, after: datetime, loops: int = 2, timeout: float = 120) -> None:
        """Wait until the scheduler has heartbeated ``loops`` times after ``after``: its loop has run past it."""
        seen: set[datetime] = set()
        deadline = time.monotonic() + timeout
        while len(seen) < loops and time.monotonic() < deadline:
            beat = self.scheduler_heartbeat()
            if beat is not None and beat > after:
                seen.add(beat)
            time.sleep(0.5)
        assert len(seen) >= loops, f"the scheduler did not loop {loops} times after {after}: {seen}"

    def letter_of(self, dag_id: str, task_id: str, run_id: str | None = None) -> Letter | None:
        """The task's letter (of ``run_id`` when given: each test makes its own runs)."""
        found = self.store.list(LetterFilter(dag_id=dag_id, task_id=task_id))
        found = [letter for letter in found if run_id is None or letter.run_id == run_id]
        assert len(found) <= 1
        return found[0] if found else None

    def wait_letter_of(
        self, dag_id: str, task_id: str, check: Callable[[Letter], bool], run_id: str | None = None
    ) -> Letter:
        """Wait until the task's letter exists and meets ``check``."""
        deadline = time.monotonic() + 60
        letter = self.letter_of(dag_id, task_id, run_id)
        while (letter is None or not check(letter)) and time.monotonic() < deadline:
            time.sleep(1)
            letter = self.letter_of(dag_id, task_id, run_id)
        assert letter is not None and check(letter), f"no matching letter of {dag_id}.{task_id}: {letter}"
        return letter

    def wait_letter(self, letter_id: int, check: Callable[[Letter], bool], timeout: float = 300) -> Letter:
        # 300 s: a replayed try is scheduled, runs and fails, then its callback files the letter again;
        # under the suite's load (both e2e lanes starting stacks) that once took longer than 150 s
        deadline = time.monotonic() + timeout
        letter = self.store.get(letter_id)
        while time.monotonic() < deadline:
            letter = self.store.get(letter_id)
            if letter is not None and check(letter):
                return letter
            time.sleep(1)
        raise AssertionError(f"letter {letter_id} did not reach the expected state: {letter}")

    def counter(self, name: str) -> int:
        """What the StatsD listener has counted so far for ``airflow.retry_provider.<name>``."""
        return self.statsd.counters("airflow.retry_provider.").get(f"airflow.retry_provider.{name}", 0)

    def wait_counted(self, before: dict[str, int], timeout: float = 30) -> None:
        """Wait until each counter went up by at least one from ``before`` (at least: UDP may drop)."""
        deadline = time.monotonic() + timeout
        while any(self.counter(n) <= c for n, c in before.items()) and time.monotonic() < deadline:
            time.sleep(0.5)
        after = {name: self.counter(name) for name in before}
        assert all(after[name] >= count + 1 for name, count in before.items()), (
            f"not counted on the wire: {before} -> {after}"
        )

    def counters(self, *names: str) -> dict[str, int]:
        return {name: self.counter(name) for name in names}

    def set_variable(self, key: str, value: str) -> None:
        try:
            self.stack.api("PATCH", f"/api/v2/variables/{key}", json={"key": key, "value": value})
        except RuntimeError:
            self.stack.api("POST", "/api/v2/variables", json={"key": key, "value": value})


def _ti_ref(dag_id: str, run_id: str, task_id: str) -> TaskInstanceRef:
    return TaskInstanceRef(dag_id, run_id, task_id, -1, "failed", 1)


@pytest.fixture(scope="module")
def env(pg_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    """A real Airflow on fresh databases with tests/dag_files and dags/, its metrics sent to a StatsD listener."""
    statsd = StatsdListener()
    extra_env = {
        "AIRFLOW__RETRY_PROVIDER__SWEEP_GRACE_SECONDS": "0",
        "AIRFLOW__METRICS__STATSD_ON": "True",
        "AIRFLOW__METRICS__STATSD_HOST": "127.0.0.1",
        "AIRFLOW__METRICS__STATSD_PORT": str(statsd.port),
        "AIRFLOW__METRICS__STATSD_PREFIX": "airflow",
    }
    try:
        with running_airflow(
            pg_server,
            tmp_path_factory.mktemp("dlq-airflow-home"),
            "dlq",
            extra_env=extra_env,
            stack_options={"users": {READER: "viewer"}},  # may read every DAG, edit none
        ) as airflow:
            yield Env(airflow.stack, pg_server, airflow.provider_db, airflow.provider_dsn, statsd)
    finally:
        statsd.close()


@pytest.fixture
def poison_run(env: Env) -> str:
    """A run of its own, for each test, of the DAG with an invalid job between two valid ones, finished
    (a test that replays it changes its tries: no other test may see that)."""
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
    letter = env.wait_letter_of(POISON_DAG, "invalid_job", lambda lt: lt.try_number == 1, poison_run)
    assert (letter.status, letter.replay_count, letter.try_number) == ("dlq", 0, 1)
    assert (letter.failure_class, letter.category, letter.filed_by) == ("poison", "not-found", "callback")
    assert env.letter_of(POISON_DAG, "valid_before", poison_run) is None


def test_replays_without_a_fix_return_to_dlq_and_park_at_the_cap(env: Env, poison_run: str):
    """Each replay without a fix runs once and returns to ``dlq``; nothing runs by itself; the third parks it."""
    letter = env.wait_letter_of(POISON_DAG, "invalid_job", lambda lt: lt.status == "dlq", poison_run)
    engine = env.engine()
    preview = engine.preview(ids=[letter.id])
    assert [item.letter.id for item in preview.items] == [letter.id]
    assert [(t.task_id, t.map_index) for t in preview.items[0].instances] == [("invalid_job", -1)]
    assert env.ti(POISON_DAG, poison_run, "invalid_job")["try_number"] == 1  # the dry-run changed nothing
    assert env.store.replays(letter.id) == []

    counted = env.counters("letter.dlq", "letter.parked", "replay.cleared")
    request = ReplayRequest("ana", "deployed nothing yet", "v1")
    report = replay_and_wait(engine, request, ids=[letter.id])
    assert report.cleared == [letter.id]
    after_one = env.wait_letter(letter.id, lambda lt: lt.replay_count == 1)
    assert after_one.status == "dlq"
    ti = env.wait_ti(POISON_DAG, poison_run, "invalid_job", "failed", 2)
    assert ti["note"].startswith(f"airflow-retry replay #{report.results[0].replay_id} by ana:")

    # a poison task replayed without a fix never loops by itself: the scheduler's next loops pass it by
    env.wait_scheduler_loops(after=datetime.fromisoformat(ti["end_date"]))
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
    env.wait_counted(counted)  # back in dlq (callback), parked (callback), cleared (the plugin, api-server)

    refused = replay_and_wait(engine, ReplayRequest("ana", "once more", "v1"), ids=[letter.id])
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
    letter = env.wait_letter_of(FIX_DAG, "load_positions", lambda lt: lt.status == "dlq")
    env.wait_ti(FIX_DAG, run_id, "load_positions", "failed", 1)
    env.set_variable("policy_fix_applied", "yes")
    counted = env.counters("letter.resolved", "replay.cleared")
    _replay_through_plugin(env, letter.id, "positions_v3 created", "v2", processing_version="p2")
    resolved = env.wait_letter(letter.id, lambda lt: lt.status != "replaying")
    assert (resolved.status, resolved.replay_count) == ("resolved", 0)
    assert env.ti(FIX_DAG, run_id, "load_positions")["state"] == "success"
    (replay,) = env.store.replays(letter.id)
    assert (replay.outcome, replay.fix_version, replay.processing_version) == ("succeeded", "v2", "p2")
    assert resolved.work_unit_key == letter.work_unit_key  # identity is kept; the new version is recorded
    env.wait_counted(counted)


def test_a_clear_the_scheduler_overtook_is_queued_again_and_the_fix_resolves_the_letter(env: Env):
    """The scheduler fails the run while a replay's clear commits (its race, played here): the driver sees the run
    failed right after the clear, queues it again, and the cleared task runs and resolves the letter.

    On Airflow 3.4 the clear locks the run first, so the race cannot happen through its REST API: the
    same steps end resolved with nothing for the driver to do.

    The test plays the scheduler's part (``tests/dags/test_clear_race.py`` shows it in Airflow's code):
    the real scheduler paused, the run set running and locked as the scheduler's loop locks it, the
    replay asked of the plugin, and once the clear waits for that lock, the run failed and committed.
    """
    env.set_variable("policy_fix_applied", "no")
    run_id = env.trigger(FIX_DAG)
    assert env.stack.wait_for_run(FIX_DAG, run_id, timeout=240)["state"] == "failed"
    letter = env.wait_letter_of(FIX_DAG, "load_positions", lambda lt: lt.status == "dlq", run_id)
    env.wait_ti(FIX_DAG, run_id, "load_positions", "failed", 1)
    env.set_variable("policy_fix_applied", "yes")
    metadata = env.stack.metadata_url.replace("postgresql+psycopg2://", "postgresql://", 1)
    key = (FIX_DAG, run_id)
    with env.stack.paused("scheduler"):  # left running again once the transaction below has committed
        with psycopg.connect(metadata) as played, psycopg.connect(metadata, autocommit=True) as watch:
            played.execute("UPDATE dag_run SET state = 'running' WHERE dag_id = %s AND run_id = %s", key)
            played.commit()
            played.execute("SELECT 1 FROM dag_run WHERE dag_id = %s AND run_id = %s FOR UPDATE", key)
            body = {  # on the run's own version: moving a run to the latest, 3.4's clear locks it first
                "ids": [letter.id],
                "reason": "positions_v3 created",
                "fix_version": "v2",
                "run_on_latest_version": False,
            }
            job = env.stack.api("POST", "/retry-provider/api/replays", json=body)
            deadline = time.monotonic() + 60
            waiting = 0
            while not waiting and time.monotonic() < deadline:  # the clear waits for the run's lock
                time.sleep(0.2)
                (waiting,) = watch.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                    " AND wait_event_type = 'Lock' AND query ILIKE '%%dag_run%%'"
                ).fetchone()  # type: ignore[misc]
            assert waiting, "the replay's clear never waited for the run's lock"
            played.execute("UPDATE dag_run SET state = 'failed' WHERE dag_id = %s AND run_id = %s", key)
        # the transaction committed on leaving the block: the clear commits into a failed run
    resolved = env.wait_letter(letter.id, lambda lt: lt.status != "replaying")
    assert (resolved.status, resolved.replay_count) == ("resolved", 0)
    assert env.stack.wait_for_run(FIX_DAG, run_id, timeout=240)["state"] == "success"
    assert env.stack.api("GET", f"/retry-provider/api/jobs/{job['id']}")["finished"]
    # 3.3: the driver's look queued the run. 3.4 locks the run in its clear (lock_dag_runs) before
    # reading it, so its clear saw the run failed and queued it itself: the look changed nothing.
    assert ("queued it again" in env.stack.log_tail("api-server", 200_000)) is not one_row_per_try()


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
        assert {PROBE_DAG, FIX_DAG, POISON_DAG} <= set(dags) and SWEEP_TARGET_DAG not in dags
        failed = [ti for dag_id in dags for ti in failed_task_instances(api, dag_id)]
        again = sweep(env.store, api, dags, replay_cap=3, grace=timedelta(0))
    assert {(ti.dag_id, ti.task_id) for ti in failed} >= {(PROBE_DAG, "always_poison")}
    assert (again.filed, again.covered, again.errors) == ((), len(failed), ())  # every failure has its letter
    with psycopg.connect(env.provider_dsn) as conn:
        total, distinct = conn.execute(
            "SELECT count(*), count(DISTINCT (dag_id, run_id, task_id, map_index)) FROM retry_dead_letters"
        ).fetchone()  # type: ignore[misc]
    assert total == distinct  # one letter per task instance, however many tests filed before


def test_the_sweeper_keeps_its_grace_and_look_back_and_refiles_a_replay_failed_at_a_newer_try(
    env: Env, pg_dsn: str
):
    """Into an empty store: a fresh failure is left to its callback, an old one is out of the look-back; then filed, replayed, refiled."""
    run_id = env.trigger(SWEEP_TARGET_DAG)
    assert env.stack.wait_for_run(SWEEP_TARGET_DAG, run_id, timeout=240)["state"] == "failed"
    ended = datetime.fromisoformat(
        env.wait_ti(SWEEP_TARGET_DAG, run_id, "fails_without_a_letter", "failed", 1)["end_date"]
    )
    store = DeadLetterStore.from_dsn(pg_dsn)
    dags = [SWEEP_TARGET_DAG]
    with AirflowApi(env.credentials) as api:
        within_grace = sweep(
            store, api, dags, replay_cap=3, grace=timedelta(hours=1), now=ended + timedelta(minutes=59)
        )
        assert (within_grace.filed, within_grace.covered) == ((), 0)  # still its callback's to file
        later = ended + timedelta(days=8)
        past_look_back = sweep(
            store, api, dags, replay_cap=3, lookback=timedelta(days=7), grace=timedelta(0), now=later
        )
        assert (past_look_back.filed, past_look_back.covered) == ((), 0)  # ended before the look-back
        assert store.list(LetterFilter(dag_id=SWEEP_TARGET_DAG)) == []
        filed = sweep(store, api, dags, replay_cap=3, grace=timedelta(0))
        (letter_id,) = filed.filed
        letter = store.get(letter_id)
        assert letter is not None and (letter.run_id, letter.try_number, letter.status) == (run_id, 1, "dlq")

        report = replay_and_wait(
            ReplayEngine(store, api, replay_cap=3), ReplayRequest("ana", "try again", "v1"), ids=[letter_id]
        )
        assert report.cleared == [letter_id]
        env.wait_ti(SWEEP_TARGET_DAG, run_id, "fails_without_a_letter", "failed", 2)
        assert store.get(letter_id).status == "replaying"  # type: ignore[union-attr]  # no callback wrote back
        refiled = sweep(store, api, dags, replay_cap=3, grace=timedelta(0))
    assert refiled.filed == (letter_id,)
    letter = store.get(letter_id)
    assert letter is not None
    assert (letter.status, letter.try_number, letter.replay_count) == ("dlq", 2, 1)
    assert [r.outcome for r in store.replays(letter_id)] == ["failed"]


def test_a_running_task_instance_is_not_cleared_and_the_letter_returns_to_dlq(env: Env):
    """Airflow does not clear a running task instance (nothing to clear, or 409): it keeps running untouched, the letter is back in dlq saying why."""
    env.set_variable(RELEASE_VARIABLE, "no")
    run_id = env.trigger(RUNNING_DAG)
    deadline = time.monotonic() + 180
    while (
        env.ti(RUNNING_DAG, run_id, "runs_until_released")["state"] != "running"
        and time.monotonic() < deadline
    ):
        time.sleep(1)
    try:
        assert env.ti(RUNNING_DAG, run_id, "runs_until_released")["state"] == "running"
        letter_id = env.store.file(
            new_letter(dag_id=RUNNING_DAG, run_id=run_id, task_id="runs_until_released"), replay_cap=3
        ).letter_id
        counted = env.counters("replay.clear_failed")
        job = _replay_through_plugin(env, letter_id, "too early", "v1")
        assert job["counts"] == {"clear-failed": 1}, job
        ti = env.ti(RUNNING_DAG, run_id, "runs_until_released")
        assert (ti["state"], ti["try_number"]) == ("running", 1)  # not restarted behind the replay's back
        letter = env.store.get(letter_id)
        assert letter is not None and (letter.status, letter.replay_count) == ("dlq", 0)
        # a replay clears only failed task instances (only_failed): Airflow clears nothing, or refuses (409)
        reason = letter.status_reason or ""
        assert "409" in reason or "cleared no task instance" in reason, reason
        env.wait_counted(counted)
    finally:
        env.set_variable(RELEASE_VARIABLE, "yes")
    env.wait_ti(RUNNING_DAG, run_id, "runs_until_released", "failed", 1)


def test_airflow_refusing_the_clear_with_403_sends_the_letter_back_to_dlq(env: Env):
    """Replaying as a user Airflow lets read but not edit: Airflow answers 403, nothing is cleared, and the
    letter is back in dlq with the refusal as its reason."""
    env.set_variable(RELEASE_VARIABLE, "yes")  # the task fails at once
    run_id = env.trigger(RUNNING_DAG)
    env.wait_ti(RUNNING_DAG, run_id, "runs_until_released", "failed", 1)
    letter_id = env.store.file(
        new_letter(dag_id=RUNNING_DAG, run_id=run_id, task_id="runs_until_released"), replay_cap=3
    ).letter_id
    reader = ApiCredentials(env.stack.base_url, READER, env.stack.password(READER))
    assert AirflowApi(reader).task_instance(RUNNING_DAG, run_id, "runs_until_released").state == "failed"
    engine = ReplayEngine(env.store, AirflowApi(reader), replay_cap=3, rate_per_minute=10)
    report = replay_and_wait(engine, ReplayRequest("ana", "fixed", "v1", downstream=False), ids=[letter_id])
    assert [(r.outcome, "403" in (r.detail or "")) for r in report.results] == [("clear-failed", True)], (
        report
    )
    letter = env.store.get(letter_id)
    assert letter is not None and (letter.status, letter.replay_count) == ("dlq", 0)
    assert "403" in (letter.status_reason or ""), letter.status_reason
    assert [r.outcome for r in env.store.replays(letter_id)] == ["clear-failed"]
    ti = env.ti(RUNNING_DAG, run_id, "runs_until_released")
    assert (ti["state"], ti["try_number"]) == ("failed", 1)  # not cleared


def _replay_through_plugin(env: Env, letter_id: int, reason: str, fix_version: str, **extra: str) -> dict:
    """POST the plugin's replay API as the signed-in admin (the acting user comes from the token; a body
    naming an ``actor`` is refused with 422, tests/integration/plugin/test_app.py)."""
    body = {"ids": [letter_id], "reason": reason, "fix_version": fix_version, **extra}
    job = env.stack.api("POST", "/retry-provider/api/replays", json=body)
    deadline = time.monotonic() + 120
    while not job["finished"] and time.monotonic() < deadline:
        time.sleep(1)
        job = env.stack.api("GET", f"/retry-provider/api/jobs/{job['id']}")
    assert job["finished"] and job["error"] is None, job
    return dict(job)


def test_a_replay_reconnects_to_the_remote_job_its_try_stored(env: Env):
    """A remote job outlives its only try (timed out, outcome unknown, a letter); its replay reads the job id the try stored and submits nothing."""
    from tests.dag_files.execution_dags import JOB_SERVICE_SQL

    with psycopg.connect(env.provider_dsn) as conn:
        conn.execute(JOB_SERVICE_SQL)
    run_id = env.trigger(REMOTE_JOB_DAG)
    assert env.stack.wait_for_run(REMOTE_JOB_DAG, run_id, timeout=240)["state"] == "failed"
    letter = env.wait_letter_of(REMOTE_JOB_DAG, "long_job", lambda lt: lt.status == "dlq", run_id)
    env.wait_ti(REMOTE_JOB_DAG, run_id, "long_job", "failed", 1)
    with psycopg.connect(env.provider_dsn) as conn:  # the job finishes after the try gave up on it
        [(job_id, wait)] = conn.execute(
            "SELECT job_id, greatest(0, extract(epoch FROM finishes_at - clock_timestamp()))::float "
            "FROM test_job_service WHERE submitted_by = 'long_job#1'"
        ).fetchall()
    time.sleep(wait + 1)
    _replay_through_plugin(env, letter.id, "the job outlived the try", "v1")
    resolved = env.wait_letter(letter.id, lambda lt: lt.status != "replaying")
    assert resolved.status == "resolved", resolved
    assert env.ti(REMOTE_JOB_DAG, run_id, "long_job")["state"] == "success"
    with psycopg.connect(env.provider_dsn) as conn:
        jobs = conn.execute("SELECT job_id, submitted_by, refused FROM test_job_service").fetchall()
    # one job, submitted by the first try; the replay reconnected to the id it stored (Airflow 3.4
    # keeps task state only when asked: keep_task_state=true) instead of submitting it again (a
    # 409 would be counted as refused)
    assert jobs == [(job_id, "long_job#1", 0)]
