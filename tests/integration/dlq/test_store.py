"""The dead-letter store on a real PostgreSQL: idempotent filing, refiling at a newer try, keyset pages."""

from __future__ import annotations

from dataclasses import replace

from airflow_retry_provider.dlq.models import ClosedReplay
from airflow_retry_provider.dlq.replay import ReplayEngine, ReplayRequest
from airflow_retry_provider.dlq.store import DeadLetterStore, LetterFilter
from tests.integration.dlq import support


def test_filing_the_same_try_twice_writes_one_row(pg_dsn):
    """The upsert is keyed by task instance and try: a repeat changes nothing."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    first = store.file(support.letter(), replay_cap=3)
    second = store.file(support.letter(), replay_cap=3)
    assert (first.created, second.created, second.changed) == (True, False, False)
    assert first.letter_id == second.letter_id
    assert len(support.rows(pg_dsn)) == 1


def test_a_later_try_updates_the_letter_and_a_failed_replay_counts(pg_dsn):
    """Try 2 of a replaying letter puts it back in dlq with replay_count 1 and closes the pending replay."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    letter_id = store.file(support.letter(), replay_cap=3).letter_id
    engine = ReplayEngine(store, replay_cap=3)
    assert engine.claim(store.get(letter_id), ReplayRequest("ana", "retry", "v1")) is not None  # type: ignore[arg-type]
    result = store.file(replace(support.letter(try_number=2), message="still missing"), replay_cap=3)
    assert (result.created, result.changed, result.status, result.replay_count) == (False, True, "dlq", 1)
    (row,) = support.rows(pg_dsn)
    assert (row["try_number"], row["message"], row["status"]) == (2, "still missing", "dlq")
    assert row["status_reason"] == "replay failed (try 2)"  # not the stale "replay requested ..."
    assert [r.outcome for r in store.replays(letter_id)] == ["failed"]


def test_the_outcome_of_a_replay_names_the_replay_it_closed(pg_dsn):
    """A replayed try that fails again, then one that succeeds: each returns the letter, the try it replayed and the replay's actor and fix (the lineage facet reads them)."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    letter_id = store.file(support.letter(), replay_cap=3).letter_id
    engine = ReplayEngine(store, replay_cap=3)
    assert engine.claim(store.get(letter_id), ReplayRequest("ana", "retry", "v1")) is not None  # type: ignore[arg-type]
    failed = store.file(support.letter(try_number=2), replay_cap=3).replay
    (first,) = store.replays(letter_id)
    assert failed == ClosedReplay(
        letter_id, 1, replay_id=first.id, job_id=None, actor="ana", fix_version="v1"
    )
    assert engine.claim(store.get(letter_id), ReplayRequest("bia", "fixed", "v2")) is not None  # type: ignore[arg-type]
    lt = support.letter()
    resolved = store.resolve_replaying(lt.dag_id, lt.run_id, lt.task_id, lt.map_index)
    second = next(r for r in store.replays(letter_id) if r.id != first.id)
    assert resolved == ClosedReplay(letter_id, 2, replay_id=second.id, actor="bia", fix_version="v2")
    assert store.resolve_replaying(lt.dag_id, lt.run_id, lt.task_id, lt.map_index) is None  # resolved already


def test_keyset_pages_cover_every_letter_once_newest_first(pg_dsn):
    """Pages of 10 over 25 letters: 10, 10, 5, no overlap, newest first; a filter pages the same way."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    for n in range(25):
        store.file(support.letter(task_id=f"t{n:02d}", dag_id="etl" if n % 2 else "other"), replay_cap=3)
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


def test_a_dismissed_letter_failing_again_at_a_newer_try_is_open_work_again(pg_dsn, caplog):
    """Dismissed, then a newer try fails: the letter is back in dlq with a reason saying so; the same try changes nothing."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    letter_id = store.file(support.letter(try_number=1), replay_cap=3).letter_id
    assert store.dismiss([letter_id], "ana", "looked harmless") == [letter_id]
    repeat = store.file(support.letter(try_number=1), replay_cap=3)
    assert (repeat.changed, repeat.reopened, store.get(letter_id).status) == (False, False, "dismissed")  # type: ignore[union-attr]
    again = store.file(support.letter(try_number=2), replay_cap=3)
    assert (again.letter_id, again.status, again.reopened) == (letter_id, "dlq", True)
    reopened = store.get(letter_id)
    assert reopened is not None and reopened.status == "dlq" and reopened.try_number == 2
    assert reopened.status_reason == "reopened: failed again after dismissal (try 2)"
