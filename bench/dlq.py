"""Dead-letter queue benchmark: callback write latency, concurrent filing, and paging over 1,000,000 letters.

Starts its own PostgreSQL (or uses AIRFLOW_RETRY_PG_DSN), prints every figure next to its anchor,
and stops what it started. Run: ``.venv/bin/python bench/dlq.py``.
"""

from __future__ import annotations

import multiprocessing
import re
import sys
import time
import uuid
from dataclasses import replace
from pathlib import Path

import psycopg
from psycopg import sql
from verdict import check, exit_code, judge

from airflow_retry_provider import migrations
from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.dlq.callback import file_letter
from airflow_retry_provider.dlq.schema import apply_schema
from airflow_retry_provider.dlq.sql import query as store_query
from airflow_retry_provider.dlq.store import DeadLetterStore, LetterFilter

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))  # devstack: not in the wheel
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.factories: the one letter builder
from devstack.postgres import server_from_env_or_start  # noqa: E402
from tests.factories import new_letter  # noqa: E402

LATENCY_SAMPLES = 400
CONCURRENT_LETTERS = 10_000
PROCESSES = 8
SEEDED_LETTERS = 1_000_000
PAGE_SAMPLES = 200
PAGE_SIZE = 50

_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)
_TEXT = (Path(__file__).with_name("dlq.sql")).read_text("utf-8")
_PARTS = _NAME.split(_TEXT)
BENCH_SQL = {name: body.strip().rstrip(";") for name, body in zip(_PARTS[1::2], _PARTS[2::2], strict=True)}

LETTER = new_letter(
    dag_id="bench", run_id="r", task_id="t", workspace_id=None
)  # poison/not-found, try 1 of 3


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def bench_latency(dsn: str) -> None:
    store = DeadLetterStore.from_dsn(dsn)
    with psycopg.connect(dsn) as conn:
        conn.execute(BENCH_SQL["create_raw_table"])
    callback, raw_connect, raw_open = [], [], []
    for i in range(30):  # warm up both paths
        file_letter(replace(LETTER, run_id=f"warm{i}"), store, replay_cap=3)
    for i in range(LATENCY_SAMPLES):
        letter = replace(LETTER, run_id=f"lat{i}")
        start = time.perf_counter()
        assert file_letter(letter, store, replay_cap=3) is not None
        callback.append(time.perf_counter() - start)
        params = {"dag_id": "bench", "run_id": f"lat{i}", "task_id": "t", "map_index": -1, "try_number": 1}
        params["message"] = letter.message
        start = time.perf_counter()
        with psycopg.connect(dsn) as conn:  # what a callback must pay too: its own connection
            conn.execute(BENCH_SQL["raw_insert"], params)
            conn.commit()
        raw_connect.append(time.perf_counter() - start)
    with psycopg.connect(dsn) as conn:
        for i in range(LATENCY_SAMPLES):
            start = time.perf_counter()
            conn.execute(BENCH_SQL["raw_insert"], {**params, "run_id": f"open{i}"})
            conn.commit()
            raw_open.append(time.perf_counter() - start)
    print("\n== callback write latency (file_letter, new connection per call, as the callback does)")
    print(f"  samples                          {LATENCY_SAMPLES}")
    print(f"  file_letter          p50 {ms(pct(callback, 0.5)):>10}   p95 {ms(pct(callback, 0.95)):>10}")
    print(
        f"  raw insert+commit    p50 {ms(pct(raw_connect, 0.5)):>10}   p95 {ms(pct(raw_connect, 0.95)):>10}"
        "   (psycopg.connect + INSERT + COMMIT: the anchor)"
    )
    print(
        f"  raw, open connection p50 {ms(pct(raw_open, 0.5)):>10}   p95 {ms(pct(raw_open, 0.95)):>10}"
        "   (reference only: no connection set-up)"
    )
    ratio50 = pct(callback, 0.5) / pct(raw_connect, 0.5)
    ratio95 = pct(callback, 0.95) / pct(raw_connect, 0.95)
    verdict = judge("callback write <= 2x raw insert", max(ratio50, ratio95) <= 2.0)
    print(f"  ratio vs anchor      p50 {ratio50:.2f}x   p95 {ratio95:.2f}x   (target <= 2x: {verdict})")
    print(
        f"  ratio vs open conn.  p50 {pct(callback, 0.5) / pct(raw_open, 0.5):.2f}x   "
        f"p95 {pct(callback, 0.95) / pct(raw_open, 0.95):.2f}x"
    )


def _file_many(args: tuple[str, int]) -> int:
    """One worker process: file its share and its neighbour's share (every letter is filed twice, concurrently)."""
    dsn, worker = args
    calls = 0
    with ProviderDatabase.from_dsn(dsn).pinned() as db:  # one connection kept across its transactions
        store = DeadLetterStore(db)
        for i in range(CONCURRENT_LETTERS):
            if i % PROCESSES in (worker, (worker + 1) % PROCESSES):
                file_letter(replace(LETTER, dag_id=f"dag{i % 50}", run_id=f"run{i}"), store, replay_cap=3)
                calls += 1
    return calls


def _warm_up(_: int) -> int:
    return 0


def bench_concurrent(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute(BENCH_SQL["truncate_letters"])
    context = multiprocessing.get_context("spawn")
    with context.Pool(PROCESSES) as pool:
        pool.map(_warm_up, range(PROCESSES))  # start the interpreters and import before timing
        start = time.perf_counter()
        calls = sum(pool.map(_file_many, [(dsn, w) for w in range(PROCESSES)]))
        elapsed = time.perf_counter() - start
    with psycopg.connect(dsn) as conn:
        total, distinct = conn.execute(BENCH_SQL["count_letters"]).fetchone()  # type: ignore[misc]
    print(
        f"\n== {CONCURRENT_LETTERS:,} letters filed by {PROCESSES} concurrent processes "
        "(each letter filed twice; one kept connection per process)"
    )
    print(
        f"  file calls {calls:,}   rows {total:,}   distinct task instances {distinct:,}   "
        f"({check('one row per letter', total == distinct == CONCURRENT_LETTERS)}: "
        f"expected exactly {CONCURRENT_LETTERS:,})"
    )
    print(
        f"  elapsed {elapsed:.2f} s   throughput {CONCURRENT_LETTERS / elapsed:,.0f} letters/s "
        f"({calls / elapsed:,.0f} file calls/s)"
    )


def bench_pages(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute(BENCH_SQL["truncate_letters"])
        conn.execute(BENCH_SQL["drop_letter_indexes"])
        start = time.perf_counter()
        conn.execute(BENCH_SQL["seed_letters"], {"n": SEEDED_LETTERS})
        conn.commit()
        conn.execute(
            migrations.migrations()[0].sql()
        )  # 0001 is idempotent: rebuilds the dropped indexes once
        conn.execute(BENCH_SQL["analyze_letters"])
        conn.commit()
        seeded = time.perf_counter() - start
    print(f"\n== paging over {SEEDED_LETTERS:,} letters (seeded with generate_series in {seeded:.1f} s)")
    # never server-side prepared, like the store's own one-connection-per-call use: custom plans every time
    never_prepared = ProviderDatabase(lambda: psycopg.connect(dsn, prepare_threshold=None))
    with never_prepared.pinned() as kept:
        stores = {
            "one kept connection (the target)": DeadLetterStore(kept),
            "new connection per call (reference)": DeadLetterStore.from_dsn(dsn),
        }
        first_page = stores["one kept connection (the target)"].list(limit=PAGE_SIZE)
        cases = {
            "first page (whole queue)": (LetterFilter(), None),
            "filtered page (dag_17, dlq)": (LetterFilter(dag_id="dag_17", status="dlq"), None),
            "next page (keyset)": (LetterFilter(), (first_page[-1].created_at, first_page[-1].id)),
        }
        for mode, store in stores.items():
            print(f"  DeadLetterStore.list, {mode}:")
            for label, (where, before) in cases.items():
                samples = []
                for _ in range(PAGE_SAMPLES):
                    start = time.perf_counter()
                    rows = store.list(where, limit=PAGE_SIZE, before=before)
                    samples.append(time.perf_counter() - start)
                assert len(rows) == PAGE_SIZE, (label, len(rows))
                figures = (
                    f"    {label:<30} p50 {ms(pct(samples, 0.5)):>9}   p95 {ms(pct(samples, 0.95)):>9}   "
                )
                if "target" in mode:
                    figures += (
                        f"target p95 <= 20 ms: {judge(f'{label} p95 <= 20 ms', pct(samples, 0.95) <= 0.020)}"
                    )
                print(figures)
    explain = sql.SQL("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) {}").format(sql.SQL(store_query("list_letters")))
    with psycopg.connect(dsn) as conn:
        for label, (where, before) in list(cases.items())[:2]:
            params = where.as_params()
            params.update(
                limit=PAGE_SIZE,
                before_created=before[0] if before else None,
                before_id=before[1] if before else None,
            )
            print(f"\n  plan: {label}")
            for (line,) in conn.execute(explain, params).fetchall():
                print(f"    {line}")


def main() -> int:
    started = time.perf_counter()
    server = server_from_env_or_start()
    name = f"arp_bench_dlq_{uuid.uuid4().hex[:8]}"
    try:
        dsn = server.create_database(name)
        with psycopg.connect(dsn) as conn:
            apply_schema(conn)
        print(f"PostgreSQL {server.host}:{server.port}, database {name}")
        bench_latency(dsn)
        bench_concurrent(dsn)
        bench_pages(dsn)
    finally:
        try:
            server.drop_database(name)
        finally:
            server.stop()
    print(f"\ntotal {time.perf_counter() - started:.0f} s")
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
