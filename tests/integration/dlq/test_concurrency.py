"""Many processes file letters at once: every letter exactly once (the benchmark's 10,000-from-8 claim, smaller)."""

from __future__ import annotations

import multiprocessing

import psycopg

from airflow_retry_provider.dlq.callback import file_letter
from airflow_retry_provider.dlq.store import DeadLetterStore
from tests.factories import new_letter

LETTERS = 800
PROCESSES = 8


def _file_share(args: tuple[str, int]) -> int:
    """One process: file its share and its neighbour's, so every letter is filed twice, by two processes."""
    dsn, worker = args
    store = DeadLetterStore.from_dsn(dsn)
    calls = 0
    for i in range(LETTERS):
        if i % PROCESSES in (worker, (worker + 1) % PROCESSES):
            assert file_letter(new_letter(dag_id=f"dag{i % 50}", run_id=f"run{i}"), store, replay_cap=3)
            calls += 1
    return calls


def test_eight_processes_filing_every_letter_twice_write_each_exactly_once(pg_dsn):
    """8 processes file 800 letters, each twice and concurrently: 1,600 calls, 800 rows, no duplicate, none lost."""
    with multiprocessing.get_context("spawn").Pool(PROCESSES) as pool:
        calls = sum(pool.map(_file_share, [(pg_dsn, w) for w in range(PROCESSES)]))
    with psycopg.connect(pg_dsn) as conn:
        total, distinct, runs = conn.execute(
            "SELECT count(*), count(DISTINCT (dag_id, run_id, task_id, map_index)), count(DISTINCT run_id)"
            " FROM retry_dead_letters"
        ).fetchone()  # type: ignore[misc]
    assert calls == 2 * LETTERS
    assert (total, distinct, runs) == (LETTERS, LETTERS, LETTERS)
