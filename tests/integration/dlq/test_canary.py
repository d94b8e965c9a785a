"""A replay job starts with one canary (issue 29 item 4), on a real PostgreSQL.

Airflow is tests/local_airflow.py (answering_airflow): its task instances answer whatever state a test
sets (fault injection), so each test decides the canary's outcome (succeeded, failed again, never
known) and when.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from airflow_retry_provider import announce
from airflow_retry_provider.cli import main
from airflow_retry_provider.dlq.announce import JobFailed
from airflow_retry_provider.dlq.decide import step_rate
from airflow_retry_provider.dlq.driver import ReplayDriver
from airflow_retry_provider.dlq.models import ReplayRequest
from airflow_retry_provider.dlq.replay import ReplayEngine
from airflow_retry_provider.dlq.store import DeadLetterStore, JobError, JobStore
from airflow_retry_provider.dlq.sync import OutcomeSync
from tests.factories import new_letter
from tests.integration.dlq.support import drive_one
from tests.local_airflow import AnsweringAirflow, answering_airflow
from tests.one_by_one import sync_outcomes

QUICK_STEPS = ((1, 20), (2, 40))  # one clear at 20/min (3 s), two at 40/min (1.5 s), then 600/min


@pytest.fixture
def fake() -> Iterator[AnsweringAirflow]:
    with answering_airflow() as served:
        yield served


@pytest.fixture
def told() -> Iterator[list[Any]]:
    """The jobs announced failed or stopped (what the job_failed alert is built from)."""
    seen: list[Any] = []

    def listener(event: announce.Event) -> None:
        if isinstance(event, JobFailed):
            seen.append((event.job, dict(event.counts)))

    announce.register(listener)
    try:
        yield seen
    finally:
        announce.unregister(listener)


def _file(store: DeadLetterStore, fake: AnsweringAirflow, count: int) -> list[int]:
    ids = []
    for n in range(count):
        fake.set("etl", "r1", f"t{n}", "failed", 1)
        ids.append(store.file(new_letter(task_id=f"t{n}"), replay_cap=3).letter_id)
    return ids


def _letters(store: DeadLetterStore, ids: list[int]) -> list[Any]:
    return [store.get(i) for i in ids]


def _driver(
    store: DeadLetterStore,
    fake: AnsweringAirflow,
    on_nap: Any = None,
    rate: int = 600,
    lease: int = 60,
    **kwargs: Any,
) -> ReplayDriver:
    def sleep(seconds: float) -> None:
        if on_nap is not None:
            on_nap()
        time.sleep(min(seconds, 0.2))

    engine = ReplayEngine(
        store, fake.api(), replay_cap=3, rate_per_minute=rate, lease_seconds=lease, sleep=sleep
    )
    kwargs.setdefault("canary_poll", 0.2)
    kwargs.setdefault("pace_steps", QUICK_STEPS)
    return ReplayDriver(engine, fake.api, **kwargs)


def _queued_become(fake: AnsweringAirflow, state: str, only: str | None = None) -> None:
    """Each cleared (queued) task instance ends ``state`` at its new try, as Airflow's worker would run it."""
    with fake.lock:
        for (_, _, task_id, _), ti in fake.instances.items():
            if ti["state"] == "queued" and (only is None or task_id == only):
                ti["state"] = state


def _clears(dsn: str, job_id: int) -> list[tuple[int, Any]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT letter_id, clear_sent_at FROM retry_replays WHERE job_id = %s ORDER BY clear_sent_at",
            (job_id,),
        ).fetchall()


def _request() -> ReplayRequest:
    return ReplayRequest("ana", "fixed the parser", "v2")


def test_the_rising_pace_steps_are_one_rule():
    """One clear at 1/min, the next five at 5/min, then the configured pace, never above it."""
    assert [step_rate(n, 60) for n in range(8)] == [1, 5, 5, 5, 5, 5, 60, 60]
    assert step_rate(3, 2) == 2  # a configured pace below a step's wins


def test_a_canary_that_succeeds_lets_the_rest_follow_at_the_rising_pace(pg_dsn, fake, told):
    """The newest letter is cleared alone first; once it resolved the rest are cleared, spaced by the steps."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    ids = _file(store, fake, 5)
    job_id = JobStore(store.db).create(_request(), _letters(store, ids), canary=True)
    driver = _driver(store, fake, on_nap=lambda: _queued_become(fake, "success"))
    told_progress: list[tuple[int, int]] = []
    driver.run_job(job_id, lambda result, done, total: told_progress.append((done, total)))
    assert told_progress == [(n, 5) for n in range(1, 6)]  # the canary counts once, first
    view = driver.jobs.require(job_id)
    assert view.job.status == "done" and view.canary is not None
    assert view.canary.letter_id == max(ids)  # the newest
    clears = _clears(pg_dsn, job_id)
    assert clears[0][0] == max(ids)
    assert clears[0][1] < view.job.paced_since < clears[1][1]  # the rest waited for the canary's success
    gaps = [(b[1] - a[1]).total_seconds() for a, b in zip(clears, clears[1:], strict=False)]
    assert gaps[0] >= 2.9  # the first step: one clear at 20/min after the canary's
    assert gaps[1] >= 1.4 and gaps[2] >= 1.4  # the second: two at 40/min
    assert gaps[3] < gaps[0]  # then the configured pace
    assert [item.outcome for item in view.items] == ["cleared"] * 5
    _queued_become(fake, "success")  # the last cleared task runs after the job's end
    sync_outcomes(OutcomeSync(store, fake.api(), replay_cap=3))
    assert {store.get(i).status for i in ids} == {"resolved"}  # type: ignore[union-attr]
    assert driver.jobs.require(job_id).verdict.resolved == 5
    assert view.to_json()["canary"]["state"] == "succeeded"
    assert told == []


def test_a_canary_that_fails_stops_the_job_and_leaves_the_others_untouched(pg_dsn, fake, told):
    """The canary fails again: job stopped naming it and why, its letter back in dlq counted, the others not touched."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    ids = _file(store, fake, 5)
    canary = ids[1]

    def fail_again() -> None:
        with fake.lock:
            for ti in fake.instances.values():
                if ti["state"] == "queued":
                    ti["state"] = "failed"

    job_id = JobStore(store.db).create(_request(), _letters(store, ids), canary_letter_id=canary)
    driver = _driver(store, fake, on_nap=fail_again)
    driver.run_job(job_id)
    view = driver.jobs.require(job_id)
    assert view.job.status == "stopped"
    assert f"canary letter {canary} failed" in (view.job.stop_reason or "")
    assert fake.calls["clear"] == 1
    back = store.get(canary)
    assert back is not None and back.status == "dlq" and back.replay_count == 1
    for other in set(ids) - {canary}:
        letter = store.get(other)
        assert letter is not None and letter.status == "dlq" and letter.replay_count == 0
        assert store.replays(other) == []
    assert sorted(item.outcome for item in view.items) == ["cleared"] + ["stopped"] * 4
    assert view.verdict.same_cause == 1 and view.verdict.resolved == 0
    ((job, counts),) = told
    assert job.stop_reason == view.job.stop_reason and counts == {"cleared": 1, "stopped": 4}
    assert view.to_json()["canary"]["state"] == "failed"


def test_the_canarys_wait_asks_airflow_about_the_canary_only(pg_dsn, fake):
    """Five other letters replaying: each look at the waiting canary is one REST call, about the canary's task instance."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    others = []
    for n in range(5):  # cleared by another job, their tasks still queued
        fake.set("etl", "r1", f"other{n}", "failed", 1)
        others.append(store.file(new_letter(task_id=f"other{n}"), replay_cap=3).letter_id)
    busy = JobStore(store.db).create(_request(), _letters(store, others), canary=False)
    _driver(store, fake).run_job(busy)
    assert {store.get(i).status for i in others} == {"replaying"}  # type: ignore[union-attr]
    ids = _file(store, fake, 3)
    canary_task = f"t{len(ids) - 1}"  # the newest letter's
    asked: list[int] = []

    def look() -> None:  # the driver naps between looks; the fourth look finds the canary resolved
        asked.append(fake.calls["task_instance"])
        if len(asked) == 4:
            _queued_become(fake, "success", only=canary_task)

    job_id = JobStore(store.db).create(_request(), _letters(store, ids), canary=True)
    _driver(store, fake, on_nap=look).run_job(job_id)
    view = JobStore(store.db).require(job_id)
    assert view.job.status == "done" and view.canary is not None and view.canary.letter_id == max(ids)
    assert asked[:4] == [0, 1, 2, 3]  # one call per look while the canary waits
    assert fake.calls["task_instance"] == 4  # 24 if each look asked about every replaying letter
    assert {store.get(i).status for i in others} == {"replaying"}  # type: ignore[union-attr]


def test_a_canary_whose_outcome_is_never_known_stops_the_job_as_undecided(pg_dsn, fake, told):
    """The canary's task stays queued past the canary timeout: the job stops, the others stay in dlq unclaimed."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    ids = _file(store, fake, 3)
    job_id = JobStore(store.db).create(_request(), _letters(store, ids), canary=True)
    driver = _driver(store, fake, canary_timeout=2)
    started = time.monotonic()
    driver.run_job(job_id)
    view = driver.jobs.require(job_id)
    assert time.monotonic() - started >= 1.9
    assert view.job.status == "stopped" and "canary undecided" in (view.job.stop_reason or "")
    assert [store.get(i).status for i in ids] == ["dlq", "dlq", "replaying"]  # type: ignore[union-attr]
    assert len(told) == 1


def test_three_failed_replays_in_a_row_stop_a_job_part_way(pg_dsn, fake, told):
    """Without a canary, the stop rule ends the job after 3 failed replays; the letters after stay in dlq."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    ids = _file(store, fake, 6)

    def fail_and_tell() -> None:  # each cleared task fails again, and the sync hears it (the callback would)
        with fake.lock:
            for ti in fake.instances.values():
                if ti["state"] == "queued":
                    ti["state"] = "failed"
        sync_outcomes(OutcomeSync(store, fake.api(), replay_cap=3))

    job_id = JobStore(store.db).create(_request(), _letters(store, ids), canary=False)
    driver = _driver(store, fake, on_nap=fail_and_tell, rate=60)
    driver.run_job(job_id)
    view = driver.jobs.require(job_id)
    assert view.job.canary_position is None
    assert view.job.status == "stopped" and "stop rule: 3 replays" in (view.job.stop_reason or "")
    assert [item.outcome for item in view.items] == ["cleared"] * 3 + ["stopped"] * 3
    assert [store.get(i).replay_count for i in ids] == [1, 1, 1, 0, 0, 0]  # type: ignore[union-attr]


def test_a_driver_dying_while_the_canary_runs_is_continued_by_another(pg_dsn, fake):
    """Driver A clears the canary and hangs; after its lease B waits for the same canary (not cleared again) and finishes."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    ids = _file(store, fake, 3)
    job_id = JobStore(store.db).create(_request(), _letters(store, ids), canary=True)
    hung, release = threading.Event(), threading.Event()

    def hang() -> None:
        hung.set()
        release.wait(30)

    a = _driver(store, fake, on_nap=hang, lease=1, owner="a")
    thread = threading.Thread(target=drive_one, args=(a,), daemon=True)
    thread.start()
    assert hung.wait(30)
    first = JobStore(store.db).require(job_id)
    assert first.job.canary_until is not None and first.job.lease_owner == "a"
    time.sleep(1.5)  # A's lease expires
    _queued_become(fake, "success")
    b = _driver(store, fake, lease=60, owner="b")
    assert drive_one(b) == job_id
    release.set()
    thread.join(30)
    driver_view = b.jobs.require(job_id)
    assert driver_view.job.status == "done" and driver_view.job.canary_until == first.job.canary_until
    assert fake.calls["clear"] == 3  # the canary was cleared once
    assert [item.outcome for item in driver_view.items] == ["cleared"] * 3


def test_a_canary_must_be_one_of_the_jobs_letters_and_one_letter_needs_none(pg_dsn, fake):
    """Naming a letter outside the job is refused naming it; a job of one letter has no canary."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    ids = _file(store, fake, 2)
    jobs = JobStore(store.db)
    with pytest.raises(JobError, match=f"canary: letter {ids[1] + 100} is not one"):
        jobs.create(_request(), _letters(store, ids), canary_letter_id=ids[1] + 100)
    alone = jobs.create(_request(), _letters(store, ids[:1]), canary=True)
    assert jobs.require(alone).job.canary_position is None


def test_the_verdict_counts_resolved_same_cause_and_new_cause(pg_dsn, fake, capsys):
    """Was it the fix: one letter resolved, one filed again with its root cause, one with another; JSON and CLI say so."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    ids = _file(store, fake, 3)
    job_id = JobStore(store.db).create(_request(), _letters(store, ids), canary=False)
    driver = _driver(store, fake)
    driver.run_job(job_id)
    assert driver.jobs.require(job_id).verdict.undecided == 3
    _queued_become(fake, "success", only="t0")
    sync_outcomes(OutcomeSync(store, fake.api(), replay_cap=3))
    store.file(new_letter(task_id="t1", try_number=2), replay_cap=3)  # the callback: the same failure again
    store.file(new_letter(task_id="t2", try_number=2, fingerprint="fedcba9876543210"), replay_cap=3)
    view = driver.jobs.require(job_id)
    assert (view.verdict.resolved, view.verdict.same_cause, view.verdict.new_cause) == (1, 1, 1)
    assert view.to_json()["verdict"]["summary"] == (
        "1 resolved by the fix; 1 failed again with the same root cause: the fix did not work; "
        "1 failed again with another root cause: a new problem"
    )
    assert main(["dlq", "job", "--job", str(job_id), "--dsn", pg_dsn]) == 0
    out = capsys.readouterr().out
    assert "canary: none" in out
    assert out.rstrip().endswith("verdict: " + view.to_json()["verdict"]["summary"])


def test_the_json_api_and_the_cli_show_the_canary_the_steps_and_the_stop(pg_dsn, fake, capsys):
    """A stopped job's JSON names its canary (failed), the pace steps and the stop; the CLI prints the same."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    ids = _file(store, fake, 2)
    job_id = JobStore(store.db).create(_request(), _letters(store, ids), canary=True)
    _driver(store, fake, on_nap=lambda: _queued_become(fake, "failed")).run_job(job_id)
    shown = JobStore(store.db).require(job_id).to_json()
    assert shown["phase"] == "stopped" and shown["canary"]["letter_id"] == ids[1]
    assert shown["pace_steps"][:2] == [{"clears": 1, "per_minute": 1}, {"clears": 5, "per_minute": 5}]
    assert shown["stop_reason"].startswith(f"canary letter {ids[1]} failed")
    assert main(["dlq", "job", "--job", str(job_id), "--dsn", pg_dsn]) == 0
    out = capsys.readouterr().out
    assert f"canary: letter {ids[1]} failed" in out
    assert "pace after the canary: 1 at 1/min, 5 at 5/min, then the configured pace" in out
    assert f"stopped: canary letter {ids[1]} failed" in out


def test_the_console_scripts_replay_json_stopped_at_its_canary_prints_only_json_on_stdout(pg_dsn, fake):
    """``airflow-retry dlq replay --json`` whose canary fails again: stdout is one JSON document (a pipe
    to ``jq`` parses it), the driver's "stopped" log line is on stderr."""
    import json
    import os
    import subprocess

    from tests.conftest import VENV_BIN

    store = DeadLetterStore.from_dsn(pg_dsn)
    ids = _file(store, fake, 2)
    done = threading.Event()

    def workers_fail_every_cleared_try() -> None:
        while not done.wait(0.1):
            _queued_become(fake, "failed")

    worker = threading.Thread(target=workers_fail_every_cleared_try, daemon=True)
    worker.start()
    try:
        result = subprocess.run(
            [
                str(VENV_BIN / "airflow-retry"), "dlq", "replay", "--dsn", pg_dsn,
                "--api-url", fake.url, "--api-user", "admin", "--api-password", "admin",
                "--actor", "ana", "--reason", "the fix is out", "--fix-version", "v2", "--json",
                *(arg for letter_id in ids for arg in ("--id", str(letter_id))),
            ],
            capture_output=True, text=True, timeout=120, env={**os.environ},
        )  # fmt: skip
    finally:
        done.set()
        worker.join()
    report = json.loads(result.stdout)  # nothing but the document: no log line before it
    assert result.stdout.lstrip().startswith("{"), result.stdout
    assert report["job_id"] is not None, report
    assert f"stopped: canary letter {ids[1]} failed" in result.stderr, result.stderr[-2000:]
    assert JobStore(store.db).require(report["job_id"]).to_json()["phase"] == "stopped"
