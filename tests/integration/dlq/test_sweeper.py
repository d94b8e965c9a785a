"""The sweeper's letters on a real PostgreSQL: filed once, refiled at a newer try, racing the callback to one row."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

from airflow_retry_provider.dlq.replay import ReplayEngine, ReplayRequest
from airflow_retry_provider.dlq.store import DeadLetterStore
from airflow_retry_provider.dlq.sweeper import parse_dag_list, sweeper_letter
from airflow_retry_provider.dlq.sync import refiled_letter
from airflow_retry_provider.hooks.airflow_api import TaskInstanceRef
from tests.integration.dlq import support
from tests.integration.dlq.support import SECRET


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


def test_the_callback_and_the_sweeper_filing_one_try_at_the_same_moment_make_one_letter(pg_dsn):
    """Twenty times, the callback's letter and the sweeper's letter for the same try race through a barrier: one row each time."""
    rounds = 20
    barrier = threading.Barrier(2)
    results: dict[str, list[Any]] = {"callback": [], "sweeper": []}

    def callback() -> None:
        store = DeadLetterStore.from_dsn(pg_dsn)
        for n in range(rounds):
            barrier.wait(timeout=30)
            results["callback"].append(store.file(support.letter(run_id=f"race{n}"), replay_cap=3))

    def sweeper() -> None:
        store = DeadLetterStore.from_dsn(pg_dsn)
        for n in range(rounds):
            ti = TaskInstanceRef("etl", f"race{n}", "load", -1, "failed", 1, max_tries=2)
            barrier.wait(timeout=30)
            results["sweeper"].append(store.file(sweeper_letter(ti, {}), replay_cap=3))

    threads = [threading.Thread(target=callback), threading.Thread(target=sweeper)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert [len(results["callback"]), len(results["sweeper"])] == [rounds, rounds]
    rows = support.rows(pg_dsn)
    assert sorted(row["run_id"] for row in rows) == sorted(f"race{n}" for n in range(rounds))
    assert {(row["status"], row["try_number"], row["replay_count"]) for row in rows} == {("dlq", 1, 0)}
    for mine, theirs in zip(results["callback"], results["sweeper"], strict=True):
        assert mine.letter_id == theirs.letter_id and [mine.created, theirs.created].count(True) == 1
