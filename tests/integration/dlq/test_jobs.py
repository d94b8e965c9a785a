"""Replay jobs, the deployment's pace, leases and letter history on a real PostgreSQL.

Airflow's API, where one is needed, is a closed port: every clear surely fails (nothing was sent),
so these tests see the claim, pace and lease machinery without a running Airflow; the clears
themselves are tested against a real Airflow in tests/e2e/test_replay_jobs.py.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from datetime import datetime, timedelta, timezone

import psycopg
import pytest

from airflow_retry_provider.dlq.driver import ReplayDriver, replay_and_wait
from airflow_retry_provider.dlq.models import Actor, ReplayResult
from airflow_retry_provider.dlq.replay import ReplayEngine, ReplayRequest
from airflow_retry_provider.dlq.store import DeadLetterStore, JobError, JobStore
from airflow_retry_provider.hooks.airflow_api import AirflowApi, ApiCredentials
from devstack.postgres import free_port
from tests.conftest import VENV_BIN
from tests.factories import new_letter
from tests.integration.dlq.support import drive_one, open_job_ids
from tests.local_airflow import refusing_airflow


def _closed_api() -> AirflowApi:
    return AirflowApi(ApiCredentials(f"http://127.0.0.1:{free_port()}", "admin", "admin"), timeout=2)


def _letters(store: DeadLetterStore, count: int, prefix: str = "t") -> list[int]:
    return [store.file(new_letter(task_id=f"{prefix}{n}"), replay_cap=3).letter_id for n in range(count)]


def _seed_clears(dsn: str, letter_id: int, count: int, seconds_ago: float) -> None:
    """``count`` clears sent ``seconds_ago``: the window the pace counts."""
    with psycopg.connect(dsn) as conn:
        for _ in range(count):
            conn.execute(
                "INSERT INTO retry_replays (letter_id, actor, reason, fix_version, try_number_before,"
                " outcome, clear_sent_at) VALUES (%s, 'seed', 'seed', 'v0', 1, 'failed',"
                " clock_timestamp() - make_interval(secs => %s))",
                (letter_id, seconds_ago),
            )


def test_the_driver_waits_for_the_pace_before_claiming(pg_dsn):
    """Two clears sent 52 s ago fill a pace of 2: the driver sleeps with the letter still in dlq, then claims.

    How long it sleeps depends on how long set-up took (it counts against the 52 s); the rule is the gap:
    the third clear leaves the first two's 60-second window.
    """
    store = DeadLetterStore.from_dsn(pg_dsn)
    (seed,) = _letters(store, 1, "seed")
    (letter_id,) = _letters(store, 1)
    _seed_clears(pg_dsn, seed, 2, seconds_ago=52)
    naps: list[float] = []
    statuses: list[str] = []

    def sleep(seconds: float) -> None:
        naps.append(seconds)
        statuses.append(store.get(letter_id).status)  # type: ignore[union-attr]
        time.sleep(seconds)

    engine = ReplayEngine(store, _closed_api(), replay_cap=3, rate_per_minute=2, sleep=sleep)
    report = replay_and_wait(engine, ReplayRequest("ana", "fixed", "v9"), ids=[letter_id])
    assert naps and sum(naps) <= 9.5, naps  # it slept, and no longer than the window asked
    assert set(statuses) == {"dlq"}  # never asleep with the letter claimed
    assert [r.outcome for r in report.results] == ["clear-failed"]
    (replay,) = store.replays(letter_id)
    with psycopg.connect(pg_dsn) as conn:
        (gap,) = conn.execute(
            "SELECT extract(epoch FROM %s - max(clear_sent_at)) FROM retry_replays WHERE letter_id = %s",
            (replay.clear_sent_at, seed),
        ).fetchone()
    assert gap >= 59.9  # the third clear left the first two's 60-second window


def test_concurrent_claims_take_one_pace_slot_at_a_time(pg_dsn):
    """Twelve threads, each its own connection, claim at once under a pace of 5/min: one wins, eleven wait 12 s."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    ids = _letters(store, 12)
    barrier = threading.Barrier(12)
    outcomes: list[tuple[int | None, float]] = []
    lock = threading.Lock()

    def worker(letter_id: int) -> None:
        engine = ReplayEngine(DeadLetterStore.from_dsn(pg_dsn), replay_cap=3, rate_per_minute=5)
        letter = engine.store.get(letter_id)
        assert letter is not None
        barrier.wait()
        claim = engine.claim_paced(letter, ReplayRequest("ana", "race", "v1"))
        with lock:
            outcomes.append((claim.replay_id, claim.wait))

    threads = [threading.Thread(target=worker, args=(i,)) for i in ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    claimed = [r for r, _ in outcomes if r is not None]
    waits = [w for r, w in outcomes if r is None]
    assert len(claimed) == 1 and len(waits) == 11
    assert all(10 < w <= 12 for w in waits), waits
    assert sum(store.get(i).status == "replaying" for i in ids) == 1  # type: ignore[union-attr]


def test_a_job_is_claimed_by_one_driver_at_a_time_and_resumed_after_its_lease(pg_dsn):
    """SKIP LOCKED: a second driver gets nothing while the lease holds, and the job once it expired."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    jobs = JobStore(store.db)
    letters = [store.get(i) for i in _letters(store, 2)]
    job_id = jobs.create(ReplayRequest("ana", "go", "v1", source="api"), letters)  # type: ignore[arg-type]
    turn = jobs.claim("driver-a", lease_seconds=1)
    first = turn.job if turn is not None else None
    assert first is not None and (first.id, first.status, first.lease_owner) == (
        job_id,
        "running",
        "driver-a",
    )
    assert jobs.claim("driver-b", lease_seconds=30) is None
    time.sleep(1.2)
    turn = jobs.claim("driver-b", lease_seconds=30)
    second = turn.job if turn is not None else None
    assert second is not None and second.lease_owner == "driver-b"
    assert jobs.turn(job_id, "driver-a", 30) is None  # the first driver stops at its next letter
    assert jobs.get(job_id).job.status == "running"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "second_job",
    [
        False,  # the round's last job: the driver learns no claim would find another
        True,  # another job is queued: the round goes on to claim it
    ],
)
def test_a_jobs_last_turn_ends_it_done_and_says_whether_another_waits(pg_dsn, second_job):
    """The turn that records a job's last letter ends the job done in that transaction, and says whether another job waits."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    jobs = JobStore(store.db)
    request = ReplayRequest("ana", "go", "v1", source="api")
    ids = _letters(store, 2)
    job_id = jobs.create(request, [store.get(ids[0])])  # type: ignore[list-item]
    if second_job:
        jobs.create(request, [store.get(ids[1])])  # type: ignore[list-item]
    turn = jobs.claim("driver-a", lease_seconds=30, job_id=job_id)
    assert turn is not None and turn.next_item is not None and turn.ended is None
    refused = ReplayResult(ids[0], "refused", detail="not replayable")
    last = jobs.turn(job_id, "driver-a", 30, done=(turn.next_item, refused))
    assert last is not None and last.next_item is None
    assert last.ended is not None and last.ended.job.status == "done" and last.ended.counts == {"refused": 1}
    assert last.another_waits is second_job
    assert jobs.require(job_id).job.status == "done"


def test_a_resumed_job_never_clears_a_letter_claimed_by_the_driver_that_died(pg_dsn):
    """The dead driver's claimed letter is recorded unknown (the sync decides); the rest of the job goes on."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    jobs = JobStore(store.db)
    ids = _letters(store, 2)
    request = ReplayRequest("ana", "go", "v1", source="api")
    job_id = jobs.create(request, [store.get(i) for i in ids])  # type: ignore[misc]
    engine = ReplayEngine(store, _closed_api(), replay_cap=3, rate_per_minute=60, lease_seconds=1)
    assert jobs.claim("dead-driver", lease_seconds=1) is not None
    first = engine.claim_paced(store.get(ids[0]), request, job_id=job_id, position=0)  # type: ignore[arg-type]
    assert first.replay_id is not None  # ... and the process died before the clear's answer
    time.sleep(1.2)
    driver = ReplayDriver(engine, _closed_api, owner="new-driver")
    assert drive_one(driver) == job_id
    view = jobs.require(job_id)
    assert view.job.status == "done"
    assert [(i.letter_id, i.outcome) for i in view.items] == [(ids[0], "unknown"), (ids[1], "clear-failed")]
    assert len(store.replays(ids[0])) == 1  # claimed once, never again by the job
    assert store.get(ids[0]).status == "replaying"  # type: ignore[union-attr]


def test_cancel_leaves_unclaimed_letters_in_dlq_and_bad_requests_change_nothing(pg_dsn):
    """Cancelling a queued job marks its letters cancelled (still dlq); an unknown id or a finished job is a clear error."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    jobs = JobStore(store.db)
    ids = _letters(store, 3)
    job_id = jobs.create(ReplayRequest("ana", "go", "v1"), [store.get(i) for i in ids])  # type: ignore[misc]
    assert jobs.cancel(job_id, "bia") == 3
    view = jobs.require(job_id)
    assert (view.job.status, view.job.cancelled_by, view.counts) == ("cancelled", "bia", {"cancelled": 3})
    assert {store.get(i).status for i in ids} == {"dlq"}  # type: ignore[union-attr]
    with pytest.raises(JobError, match=f"job: {job_id} is cancelled"):
        jobs.cancel(job_id, "bia")
    with pytest.raises(JobError, match="job: 999999 is not a replay job id"):
        jobs.cancel(999999, "bia")
    assert drive_one(ReplayDriver(ReplayEngine(store, replay_cap=3), _closed_api)) is None


def test_a_replay_of_a_replaying_letter_is_refused_and_makes_no_job(pg_dsn):
    """Only dlq letters under the cap are replayed: a replaying one is refused with its status, no job row written."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    (letter_id,) = _letters(store, 1)
    engine = ReplayEngine(store, _closed_api(), replay_cap=3)
    assert engine.claim(store.get(letter_id), ReplayRequest("ana", "first", "v1")) is not None  # type: ignore[arg-type]
    report = replay_and_wait(engine, ReplayRequest("bia", "second", "v1"), ids=[letter_id])
    assert [(r.outcome, r.detail) for r in report.results] == [("refused", "status is replaying, not dlq")]
    assert report.job_id is None and open_job_ids(pg_dsn) == []
    assert len(store.replays(letter_id)) == 1


def test_park_waits_while_a_clear_is_in_flight_and_works_once_the_lease_is_gone(pg_dsn):
    """A replaying letter mid-clear (live lease) cannot be parked; after its lease expired it can, with a reason."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    (letter_id,) = _letters(store, 1)
    engine = ReplayEngine(store, replay_cap=3, lease_seconds=1)
    engine.claim(store.get(letter_id), ReplayRequest("ana", "go", "v1"))  # type: ignore[arg-type]
    operator = Actor("carla", "ui")
    assert store.park([letter_id], operator, "vendor ticket 42") == []
    time.sleep(1.2)
    assert store.park([letter_id], operator, "vendor ticket 42") == [letter_id]
    assert store.get(letter_id).status == "parked"  # type: ignore[union-attr]
    (replay,) = store.replays(letter_id)
    assert replay.outcome == "abandoned"
    events = store.events(letter_id)
    assert [e.event for e in events] == ["filed", "claimed", "parked"]
    assert (events[-1].actor, events[-1].source, events[-1].reason) == ("carla", "ui", "vendor ticket 42")


def test_history_is_append_only_and_outlives_a_purge(pg_dsn):
    """Filed, failed again, dismissed, purged: every step is an event; the events stay after the purge and refuse edits."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    (letter_id,) = _letters(store, 1)
    engine = ReplayEngine(store, replay_cap=3)
    engine.claim(store.get(letter_id), ReplayRequest("ana", "go", "v1"))  # type: ignore[arg-type]
    store.file(new_letter(task_id="t0", try_number=2), replay_cap=3)
    cli_user = Actor("ana", "cli", verified=False, os_user="root")
    assert store.dismiss([letter_id], cli_user, "obsolete feed") == [letter_id]
    assert store.purge_closed_before(datetime.now(timezone.utc) + timedelta(seconds=1), cli_user) == [
        letter_id
    ]
    assert store.get(letter_id) is None
    events = store.events(letter_id)
    assert [e.event for e in events] == ["filed", "claimed", "failed-again", "dismissed", "purged"]
    assert [e.source for e in events] == ["callback", "cli", "callback", "cli", "cli"]
    assert events[1].try_number == 1 and events[2].try_number == 2
    assert "ana (unverified, os user root) via cli" in events[3].line()
    with psycopg.connect(pg_dsn) as conn, pytest.raises(psycopg.errors.RaiseException, match="append-only"):
        conn.execute("DELETE FROM retry_letter_events WHERE letter_id = %s", (letter_id,))


def test_three_jobs_in_two_processes_share_one_pace(pg_dsn):
    """A driver thread here and ``airflow-retry dlq drive`` in another process: clears of three jobs stay 5 s apart at 12/min.

    The other process signs in to a local Airflow stand-in that then refuses every clear (409), so it gets
    past its sign-in and drives jobs; the thread here uses a closed port. Either way every clear fails.
    """
    store = DeadLetterStore.from_dsn(pg_dsn)
    jobs = JobStore(store.db)
    for j in range(3):
        ids = _letters(store, 2, prefix=f"j{j}-")
        jobs.create(ReplayRequest(f"op{j}", "pace", "v1", source="api"), [store.get(i) for i in ids])  # type: ignore[misc]
    env = {**os.environ, "AIRFLOW__RETRY_PROVIDER__REPLAY_RATE_PER_MINUTE": "12"}
    with refusing_airflow() as url:
        api = ["--api-url", url, "--api-user", "a", "--api-password", "b"]
        other = subprocess.Popen(
            [str(VENV_BIN / "airflow-retry"), "dlq", "drive", "--dsn", pg_dsn, *api],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            here = ReplayDriver(ReplayEngine(store, replay_cap=3, rate_per_minute=12), _closed_api)
            driven_here = here.drain(deadline=time.monotonic() + 90)
            _, err = other.communicate(timeout=90)
        finally:
            other.kill()
    assert other.returncode == 0, err
    assert driven_here and "drove 0 job" not in err and "drove" in err, err  # both processes took part
    with psycopg.connect(pg_dsn) as conn:
        times = [
            row[0] for row in conn.execute("SELECT clear_sent_at FROM retry_replays ORDER BY clear_sent_at")
        ]
        statuses = conn.execute("SELECT array_agg(DISTINCT status) FROM retry_replay_jobs").fetchone()
    assert len(times) == 6 and statuses == (["done"],)
    gaps = [(b - a).total_seconds() for a, b in zip(times, times[1:], strict=False)]
    assert min(gaps) >= 4.95, gaps
    assert max(sum(1 for t in times if start <= t < start + timedelta(seconds=60)) for start in times) <= 12
