"""Ledger benchmark: claim + complete p95 against a raw insert + commit, and the @idempotent wrapper's overhead.

Starts its own PostgreSQL (or uses AIRFLOW_RETRY_PG_DSN), prints every figure next to its anchor,
and stops what it started. Run: ``.venv/bin/python bench/ledger.py``.
"""

from __future__ import annotations

import itertools
import logging
import statistics
import sys
import time
import uuid
from pathlib import Path

import psycopg
from verdict import exit_code, judge

from airflow_retry_provider.ledger import Ledger, apply_ledger_schema, idempotent

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))  # devstack: not in the wheel
from devstack.postgres import server_from_env_or_start  # noqa: E402

SAMPLES = 4000
WARMUP = 100
TARGET_RATIO = 3.0

RAW_TABLE_SQL = """
CREATE TABLE IF NOT EXISTS bench_raw (
    id text PRIMARY KEY, payload jsonb, created_at timestamptz NOT NULL DEFAULT clock_timestamp()
)
"""
RAW_INSERT_SQL = "INSERT INTO bench_raw (id, payload) VALUES (%(id)s, %(payload)s::jsonb)"


def p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=100)[94]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms"


def timed(action, n: int) -> list[float]:
    samples = []
    for i in range(n):
        began = time.perf_counter()
        action(i)
        samples.append(time.perf_counter() - began)
    return samples


def main() -> int:
    # the skip path logs one line per call; the benchmark measures it without printing it
    logging.getLogger("airflow_retry_provider.ledger.decorator").setLevel(logging.WARNING)
    server = server_from_env_or_start()
    dbname = f"arp_bench_ledger_{uuid.uuid4().hex[:8]}"
    try:
        dsn = server.create_database(dbname)
        with psycopg.connect(dsn) as conn, psycopg.connect(dsn, autocommit=True) as ledger_conn:
            apply_ledger_schema(conn)
            conn.execute(RAW_TABLE_SQL)
            conn.commit()
            # the ledger's own connection, as Ledger(connect) opens it: autocommit, since each
            # ledger call is one statement; the anchor is a plain INSERT then COMMIT
            ledger = Ledger(conn=ledger_conn)
            run = uuid.uuid4().hex[:6]

            def raw(i: int) -> None:
                conn.execute(RAW_INSERT_SQL, {"id": f"{run}-raw-{i}", "payload": '{"rows": 3}'})
                conn.commit()

            def claim_complete(i: int) -> None:
                claim = ledger.claim(f"{run}/bench/load/-1/{i}")
                ledger.complete(claim, {"rows": 3})

            timed(raw, WARMUP)
            timed(lambda i: claim_complete(i + 10_000_000), WARMUP)
            # alternate one raw write and one claim + complete so that both see the same server
            raw_samples: list[float] = []
            ledger_samples: list[float] = []
            for i in range(SAMPLES):
                raw_samples += timed(lambda _, i=i: raw(i + 1_000_000), 1)
                ledger_samples += timed(lambda _, i=i: claim_complete(i), 1)
            raw_p95, ledger_p95 = p95(raw_samples), p95(ledger_samples)
            ratio = ledger_p95 / raw_p95

            counter = itertools.count()

            def plain() -> None:
                return None

            @idempotent(key=lambda context: f"{run}/noop/{next(counter)}", ledger=ledger)
            def decorated() -> None:
                return None

            @idempotent(key=f"{run}/noop/done", ledger=ledger)
            def done() -> None:
                return None

            done()  # the unit succeeds once; every later call is a recorded-result skip
            plain_s = statistics.median(timed(lambda i: plain(), SAMPLES))
            decorated_s = statistics.median(timed(lambda i: decorated(), SAMPLES))
            skip_s = statistics.median(timed(lambda i: done(), SAMPLES))

        print("=== ledger benchmark ===")
        print(
            f"samples: {SAMPLES} per figure, one open connection each, PostgreSQL {server.dsn(dbname).split('@')[-1]}"
        )
        raw_med, ledger_med = statistics.median(raw_samples), statistics.median(ledger_samples)
        print(f"raw INSERT + COMMIT            p95 {ms(raw_p95):>12}   median {ms(raw_med)}")
        print(f"ledger claim + complete        p95 {ms(ledger_p95):>12}   median {ms(ledger_med)}   "
              "(two statements, each its own transaction)")  # fmt: skip
        print(f"ratio ledger / raw             {ratio:8.2f}x      target <= {TARGET_RATIO:.0f}x: "
              f"{judge('claim + complete <= 3x raw', ratio <= TARGET_RATIO)}")  # fmt: skip
        print(f"no-op task, plain call         median {plain_s * 1e6:10.2f} us")
        print(
            f"no-op task, @idempotent (runs) median {ms(decorated_s):>12}   overhead {ms(decorated_s - plain_s)} per call"
        )
        print(
            f"no-op task, @idempotent (skip) median {ms(skip_s):>12}   overhead {ms(skip_s - plain_s)} per call"
        )
        return exit_code()
    finally:
        try:
            server.drop_database(dbname)
        except Exception as exc:
            print(f"could not drop {dbname}: {exc}", file=sys.stderr)
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
