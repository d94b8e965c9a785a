"""The replay engine on a real PostgreSQL (Airflow's API where named: a closed port): claim, pace, park, dismiss, purge."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone

import pytest

from airflow_retry_provider.dlq.driver import replay_and_wait
from airflow_retry_provider.dlq.models import ReplayRequest, pace_seconds
from airflow_retry_provider.dlq.replay import ReplayEngine
from airflow_retry_provider.dlq.store import DeadLetterStore
from airflow_retry_provider.hooks.airflow_api import AirflowApi, ApiCredentials
from devstack.postgres import free_port
from tests.integration.dlq import support


def _closed_api() -> AirflowApi:
    """Airflow's API at a port where nothing listens: every call fails like an outage does."""
    return AirflowApi(ApiCredentials(f"http://127.0.0.1:{free_port()}", "admin", "admin"), timeout=2)


def test_32_concurrent_replays_of_one_letter_claim_it_once(pg_dsn):
    """Of 32 threads, each on its own connection, exactly one claims the letter and writes a replay row."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    letter = store.get(store.file(support.letter(), replay_cap=3).letter_id)
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
    assert len(support.rows(pg_dsn, "retry_replays")) == 1
    assert store.get(letter.id).status == "replaying"  # type: ignore[union-attr]


def test_replay_requires_actor_reason_and_fix_version():
    """Each missing field is named in the error."""
    for kwargs, field in (
        ({"actor": "", "reason": "r", "fix_version": "v"}, "actor"),
        ({"actor": "a", "reason": " ", "fix_version": "v"}, "reason"),
        ({"actor": "a", "reason": "r", "fix_version": ""}, "fix_version"),
    ):
        with pytest.raises(ValueError, match=f"needs {field}"):
            ReplayRequest(**kwargs)


def test_an_unreachable_airflow_releases_each_claim_to_dlq_recorded(pg_dsn):
    """With nothing listening on Airflow's port every clear surely failed: the letters are back in dlq, recorded."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    ids = [store.file(support.letter(task_id=f"t{n}"), replay_cap=3).letter_id for n in range(3)]
    seen: list[tuple[int, int, int]] = []
    engine = ReplayEngine(store, _closed_api(), replay_cap=3, rate_per_minute=60)
    report = replay_and_wait(
        engine,
        ReplayRequest("ana", "fixed", "v9"),
        ids=ids,
        progress=lambda result, done, total: seen.append((result.letter_id, done, total)),
    )
    assert pace_seconds(3, 2) == 60.0
    assert [r.outcome for r in report.results] == ["clear-failed"] * 3
    assert [(d, t) for _, d, t in seen] == [(1, 3), (2, 3), (3, 3)]
    for letter_id in ids:
        letter = store.get(letter_id)
        assert letter is not None and (letter.status, letter.replay_count) == ("dlq", 0)
        (recorded,) = store.replays(letter_id)
        assert (recorded.outcome, recorded.actor, recorded.fix_version) == ("clear-failed", "ana", "v9")
        assert recorded.cleared_at is None and "unreachable" in (recorded.detail or "")
        assert [e.event for e in store.events(letter_id)] == ["filed", "claimed", "clear-failed"]


def test_park_and_dismiss_are_recorded_and_guarded(pg_dsn):
    """Park needs dlq; dismiss needs a reason; both keep who and why; a parked letter is refused for replay."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    a, b = (store.file(support.letter(task_id=t), replay_cap=3).letter_id for t in ("a", "b"))
    assert store.park([a], "ana", "needs vendor") == [a]
    assert store.park([a], "ana") == []  # already parked
    with pytest.raises(ValueError, match="needs reason"):
        store.dismiss([b], "ana", "")
    assert store.dismiss([a, b], "bia", "duplicate upstream file") == [a, b]
    assert store.get(a).status_reason == "dismissed by bia: duplicate upstream file"  # type: ignore[union-attr]
    preview = ReplayEngine(store, replay_cap=3).preview(ids=[a, b])
    assert preview.count == 0 and {r.letter_id for r in preview.refused} == {a, b}


def test_purge_deletes_only_closed_letters_before_the_cutoff(pg_dsn):
    """Resolved and dismissed letters older than the cut-off go with their replays; open ones stay."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    keep, closed = (store.file(support.letter(task_id=t), replay_cap=3).letter_id for t in ("keep", "closed"))
    store.dismiss([closed], "ana", "obsolete")
    assert store.purge_closed_before(datetime.now(timezone.utc) - timedelta(hours=1)) == []
    assert store.purge_closed_before(datetime.now(timezone.utc) + timedelta(seconds=1)) == [closed]
    assert [row["id"] for row in support.rows(pg_dsn)] == [keep]


def test_purge_never_deletes_open_parked_or_replaying_letters(pg_dsn):
    """With a cut-off after every letter, purge takes the resolved and dismissed ones; dlq, parked and replaying stay."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    ids = {
        t: store.file(support.letter(task_id=t), replay_cap=3).letter_id
        for t in ("open", "parked", "replaying", "gone")
    }
    engine = ReplayEngine(store, replay_cap=3)
    assert store.park([ids["parked"]], "ana", "vendor ticket") == [ids["parked"]]
    assert engine.claim(store.get(ids["replaying"]), ReplayRequest("ana", "fixed", "v1")) is not None  # type: ignore[arg-type]
    store.dismiss([ids["gone"]], "ana", "obsolete")
    assert store.purge_closed_before(datetime.now(timezone.utc) + timedelta(days=365)) == [ids["gone"]]
    kept = {row["id"]: row["status"] for row in support.rows(pg_dsn)}
    assert kept == {ids["open"]: "dlq", ids["parked"]: "parked", ids["replaying"]: "replaying"}
    assert [r.outcome for r in store.replays(ids["replaying"])] == ["pending"]
