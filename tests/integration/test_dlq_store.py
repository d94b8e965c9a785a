"""The dead-letter store and the replay engine on a real PostgreSQL (Airflow's API where named: a closed port)."""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any

import psycopg
import pytest

from airflow_retry_provider.devstack.postgres import free_port
from airflow_retry_provider.dlq.airflow_api import AirflowApi, ApiCredentials, TaskInstanceRef
from airflow_retry_provider.dlq.callback import UNFILED_EVENT, build_letter, file_dead_letter, file_letter
from airflow_retry_provider.dlq.models import NewLetter
from airflow_retry_provider.dlq.replay import ReplayEngine, ReplayRequest, pace_seconds, refiled_letter
from airflow_retry_provider.dlq.store import DeadLetterStore, LetterFilter
from airflow_retry_provider.dlq.sweeper import parse_dag_list, sweeper_letter
from airflow_retry_provider.retry_policy import ClassifiedRetryPolicy
from tests.factories import new_letter

SECRET = "hunter2-Secr3t"
T0 = datetime(2026, 11, 2, 10, 0, tzinfo=timezone.utc)


def _letter(task_id: str = "load", try_number: int = 1, dag_id: str = "etl", run_id: str = "r1") -> NewLetter:
    return new_letter(
        task_id=task_id, try_number=try_number, dag_id=dag_id, run_id=run_id, fingerprint="f" * 16
    )


def _rows(dsn: str, table: str = "retry_dead_letters") -> list[dict[str, Any]]:
    with psycopg.connect(dsn) as conn:
        cur = conn.execute(f"SELECT * FROM {table} ORDER BY id")  # noqa: S608 - fixed table names in tests
        names = [c.name for c in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def _closed_api() -> AirflowApi:
    """Airflow's API at a port where nothing listens: every call fails like an outage does."""
    return AirflowApi(ApiCredentials(f"http://127.0.0.1:{free_port()}", "admin", "admin"), timeout=2)


def test_filing_the_same_try_twice_writes_one_row(pg_dsn):
    """The upsert is keyed by task instance and try: a repeat changes nothing."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    first = store.file(_letter(), replay_cap=3)
    second = store.file(_letter(), replay_cap=3)
    assert (first.created, second.created, second.changed) == (True, False, False)
    assert first.letter_id == second.letter_id
    assert len(_rows(pg_dsn)) == 1


def test_a_later_try_updates_the_letter_and_a_failed_replay_counts(pg_dsn):
    """Try 2 of a replaying letter puts it back in dlq with replay_count 1 and closes the pending replay."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    letter_id = store.file(_letter(), replay_cap=3).letter_id
    engine = ReplayEngine(store, replay_cap=3)
    assert engine.claim(store.get(letter_id), ReplayRequest("ana", "retry", "v1")) is not None  # type: ignore[arg-type]
    result = store.file(replace(_letter(try_number=2), message="still missing"), replay_cap=3)
    assert (result.created, result.changed, result.status, result.replay_count) == (False, True, "dlq", 1)
    (row,) = _rows(pg_dsn)
    assert (row["try_number"], row["message"], row["status"]) == (2, "still missing", "dlq")
    assert row["status_reason"] == "replay failed (try 2)"  # not the stale "replay requested ..."
    assert [r.outcome for r in store.replays(letter_id)] == ["failed"]


def test_32_concurrent_replays_of_one_letter_claim_it_once(pg_dsn):
    """Of 32 threads, each on its own connection, exactly one claims the letter and writes a replay row."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    letter = store.get(store.file(_letter(), replay_cap=3).letter_id)
    assert letter is not None
    barrier = threading.Barrier(32)
    claims: list[int | None] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        engine = ReplayEngine(DeadLetterStore.from_dsn(pg_dsn), replay_cap=3)
        request = ReplayRequest(f"op{n}", "concurrent", "v1")
        barrier.wait()
        claimed = engine.claim(letter, request)
        with lock:
            claims.append(claimed)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(claims) == 32
    assert len([c for c in claims if c is not None]) == 1
    assert len(_rows(pg_dsn, "retry_replays")) == 1
    assert store.get(letter.id).status == "replaying"  # type: ignore[union-attr]


def test_keyset_pages_cover_every_letter_once_newest_first(pg_dsn):
    """Pages of 10 over 25 letters: 10, 10, 5, no overlap, newest first; a filter pages the same way."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    for n in range(25):
        store.file(_letter(task_id=f"t{n:02d}", dag_id="etl" if n % 2 else "other"), replay_cap=3)
    seen, before, sizes = [], None, []
    while True:
        page = store.list(limit=10, before=before)
        if not page:
            break
        sizes.append(len(page))
        seen.extend(page)
        before = (page[-1].created_at, page[-1].id)
    assert sizes == [10, 10, 5]
    assert len({letter.id for letter in seen}) == 25
    assert [(lt.created_at, lt.id) for lt in seen] == sorted(
        ((lt.created_at, lt.id) for lt in seen), reverse=True
    )
    etl = store.list(LetterFilter(dag_id="etl", status="dlq"), limit=5)
    rest = store.list(
        LetterFilter(dag_id="etl", status="dlq"), limit=50, before=(etl[-1].created_at, etl[-1].id)
    )
    assert len(etl) + len(rest) == 12 and {lt.dag_id for lt in etl + rest} == {"etl"}


def _context(exception: BaseException) -> dict[str, Any]:
    """The context Airflow hands an on_failure_callback, with a real policy that judged the try."""
    policy = ClassifiedRetryPolicy("report")
    task = SimpleNamespace(retry_policy=policy, retries=2, task_id="load_positions")
    ti = SimpleNamespace(
        dag_id="positions",
        run_id="scheduled__2026-11-01",
        task_id="load_positions",
        map_index=-1,
        try_number=1,
    )
    ti.max_tries = 2
    context = {
        "ti": ti,
        "task": task,
        "exception": exception,
        "params": {},
        "data_interval_start": T0 - timedelta(days=1),
        "data_interval_end": T0,
    }
    policy.assess(exception, 1, 2, context)
    return context


def test_a_password_in_a_connection_uri_reaches_neither_the_row_nor_our_logs(provider_conn, caplog):
    """The real callback redacts the URI's password in the stored message, the reason and every log line."""
    exc = RuntimeError(
        f"password authentication failed for postgresql://etl:{SECRET}@db.internal:5432/positions"
    )
    with caplog.at_level(logging.DEBUG):
        file_dead_letter(_context(exc))
    (row,) = _rows(provider_conn)
    assert (row["failure_class"], row["category"], row["status"]) == ("poison", "auth-failed", "dlq")
    assert "postgresql://etl:***@db.internal" in row["message"]
    assert all(SECRET not in str(value) for value in row.values())
    assert caplog.records, "the callback logs what it filed"
    assert all(SECRET not in record.getMessage() for record in caplog.records)


def test_unreachable_postgres_logs_one_unfiled_event_with_the_redacted_record(caplog):
    """With PostgreSQL down, file_letter retries, logs exactly one UNFILED_EVENT line (no secret) and returns None."""
    exc = RuntimeError(f"password authentication failed for postgresql://etl:{SECRET}@db.internal/positions")
    letter = build_letter(_context(exc))
    down = DeadLetterStore.from_dsn(f"postgresql://postgres:{SECRET}@127.0.0.1:{free_port()}/nowhere")
    pauses: list[float] = []
    with caplog.at_level(logging.DEBUG):
        assert file_letter(letter, down, replay_cap=3, sleep=pauses.append) is None
    assert pauses == [0.5, 1.0]
    unfiled = [r.getMessage() for r in caplog.records if UNFILED_EVENT in r.getMessage()]
    assert len(unfiled) == 1
    assert '"dag_id": "positions"' in unfiled[0] and '"category": "auth-failed"' in unfiled[0]
    assert all(SECRET not in record.getMessage() for record in caplog.records)


def test_replay_requires_actor_reason_and_fix_version():
    """Each missing field is named in the error."""
    for kwargs, field in (
        ({"actor": "", "reason": "r", "fix_version": "v"}, "actor"),
        ({"actor": "a", "reason": " ", "fix_version": "v"}, "reason"),
        ({"actor": "a", "reason": "r", "fix_version": ""}, "fix_version"),
    ):
        with pytest.raises(ValueError, match=f"needs {field}"):
            ReplayRequest(**kwargs)


def test_clears_are_paced_and_a_failed_clear_releases_the_claim(pg_dsn):
    """At 2 clears a minute three letters wait 30 s twice; an unreachable Airflow leaves them in dlq, recorded."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    ids = [store.file(_letter(task_id=f"t{n}"), replay_cap=3).letter_id for n in range(3)]
    now = [0.0]
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += seconds

    seen: list[tuple[int, int, int]] = []
    engine = ReplayEngine(
        store, _closed_api(), replay_cap=3, rate_per_minute=2, sleep=sleep, clock=lambda: now[0]
    )
    report = engine.replay(
        ReplayRequest("ana", "fixed", "v9"),
        ids=ids,
        progress=lambda result, done, total: seen.append((result.letter_id, done, total)),
    )
    assert sleeps == [30.0, 30.0] and pace_seconds(3, 2) == 60.0
    assert [r.outcome for r in report.results] == ["clear-failed"] * 3
    assert [(d, t) for _, d, t in seen] == [(1, 3), (2, 3), (3, 3)]
    for letter_id in ids:
        letter = store.get(letter_id)
        assert letter is not None and (letter.status, letter.replay_count) == ("dlq", 0)
        (recorded,) = store.replays(letter_id)
        assert (recorded.outcome, recorded.actor, recorded.fix_version) == ("clear-failed", "ana", "v9")
        assert recorded.cleared_at is None and "unreachable" in (recorded.detail or "")


def test_park_and_dismiss_are_recorded_and_guarded(pg_dsn):
    """Park needs dlq; dismiss needs a reason; both keep who and why; a parked letter is refused for replay."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    a, b = (store.file(_letter(task_id=t), replay_cap=3).letter_id for t in ("a", "b"))
    engine = ReplayEngine(store, replay_cap=3)
    assert engine.park([a], "ana", "needs vendor") == [a]
    assert engine.park([a], "ana") == []  # already parked
    with pytest.raises(ValueError, match="needs reason"):
        engine.dismiss([b], "ana", "")
    assert engine.dismiss([a, b], "bia", "duplicate upstream file") == [a, b]
    assert store.get(a).status_reason == "dismissed by bia: duplicate upstream file"  # type: ignore[union-attr]
    preview = ReplayEngine(store, replay_cap=3).preview(ids=[a, b])
    assert preview.count == 0 and {r.letter_id for r in preview.refused} == {a, b}


def test_purge_deletes_only_closed_letters_before_the_cutoff(pg_dsn):
    """Resolved and dismissed letters older than the cut-off go with their replays; open ones stay."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    keep, closed = (store.file(_letter(task_id=t), replay_cap=3).letter_id for t in ("keep", "closed"))
    engine = ReplayEngine(store, replay_cap=3)
    engine.dismiss([closed], "ana", "obsolete")
    assert engine.purge_closed_before(datetime.now(timezone.utc) - timedelta(hours=1)) == []
    assert engine.purge_closed_before(datetime.now(timezone.utc) + timedelta(seconds=1)) == [closed]
    assert [row["id"] for row in _rows(pg_dsn)] == [keep]


def test_sweeper_and_sync_refile_through_the_idempotent_upsert(pg_dsn):
    """A sweeper letter files once; a replaying letter seen failed at a newer try returns to dlq counted."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    ti = TaskInstanceRef("etl", "r9", "load", -1, "failed", 1, max_tries=2, note=f"token={SECRET}")
    run = {"data_interval_start": "2026-11-01T03:00:00Z", "data_interval_end": "2026-11-02T03:00:00Z"}
    first = store.file(sweeper_letter(ti, run), replay_cap=3)
    assert first.created and not store.file(sweeper_letter(ti, run), replay_cap=3).changed
    letter = store.get(first.letter_id)
    assert letter is not None and (letter.category, letter.filed_by, letter.failure_class) == (
        "filed-by-sweeper",
        "sweeper",
        "unknown",
    )
    assert SECRET not in letter.message and letter.work_unit_key.startswith(
        "etl/load/-1/2026-11-01T03:00:00Z"
    )
    ReplayEngine(store, replay_cap=3).claim(letter, ReplayRequest("ana", "go", "v1"))
    again = store.file(refiled_letter(letter, replace(ti, try_number=2)), replay_cap=3)
    assert (again.status, again.replay_count) == ("dlq", 1)
    assert parse_dag_list('["a", "b"]') == ["a", "b"] and parse_dag_list("a, b c") == ["a", "b", "c"]
