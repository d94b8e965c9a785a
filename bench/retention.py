"""Benchmark: retention purges 1,000,000 old extraction events while the reconciliation keeps its p95.

Run: .venv/bin/python bench/retention.py
Data: the reconciliation benchmark's data set (1,000 workspaces, 1,000,000 recent extraction events,
source runs, connectors; bench/reconcile.py) plus 1,000,000 events 60 days old, seeded first as
they would have arrived first. The figure: the reconciliation DAG's per-workspace connector-health
query, p95 over random workspaces, measured alone and then while ``Retention`` (events older than
30 days, batches of 5,000, one short transaction each) deletes the old events in another
connection. Target: the p95 during the purge stays within the reconciliation's one-workspace
budget (100 ms); the ratio to the p95 alone is printed too. Every old event is deleted, no recent one.
``AIRFLOW_RETRY_PG_DSN`` uses an existing server instead of a throwaway cluster.
"""

from __future__ import annotations

import random
import statistics
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

import psycopg
from reconcile import AS_OF, SEED, WINDOW  # the reconciliation benchmark's data (bench/ is on sys.path)

from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.dlq.schema import apply_schema
from airflow_retry_provider.maintenance.retention import Retention, RetentionPolicy
from airflow_retry_provider.reconciliation.trails import connector_health_sql, list_workspaces

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))  # devstack: not in the wheel
from devstack.postgres import server_from_env_or_start  # noqa: E402

OLD_EVENTS = 1_000_000
SAMPLES_ALONE = 200
BUDGET = 0.1  # seconds: the one-workspace p95 target of the reconciliation benchmark

# 1,000 workspaces x 5 connectors x 40 runs x 5 events, 60 days before AS_OF.
SEED_OLD = """
    INSERT INTO extraction_events (workspace_id, connector_id, run_id, operation, started_at, duration_ms, status)
    SELECT 'w' || lpad(w::text, 4, '0'), 'conn' || c, 'old-run-' || r, 'page-' || e,
           %(as_of)s::timestamptz - interval '60 days' + r * interval '72 minutes' + e * interval '2 seconds',
           500, 'ok'
    FROM generate_series(0, 999) w, generate_series(0, 4) c, generate_series(0, 39) r, generate_series(0, 4) e
"""


def seed(conn: psycopg.Connection) -> None:
    conn.execute("SET synchronous_commit = on")
    apply_schema(conn)
    for name, statement in (("old extraction_events", SEED_OLD), *SEED.items()):
        started = time.perf_counter()
        conn.execute(statement, {"as_of": AS_OF})
        conn.commit()
        print(f"  seeded {name:<22} in {time.perf_counter() - started:5.1f} s")
    conn.autocommit = True
    conn.execute("VACUUM ANALYZE")
    conn.autocommit = False


def health_once(conn: psycopg.Connection, workspace: str) -> float:
    started = time.perf_counter()
    connector_health_sql(conn, workspace, AS_OF, WINDOW)
    conn.commit()
    return time.perf_counter() - started


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


def main() -> int:
    server = server_from_env_or_start()
    database = f"arp_bench_retention_{uuid.uuid4().hex[:8]}"
    try:
        dsn = server.create_database(database)
        with psycopg.connect(dsn) as conn:
            print(f"seeding on {dsn}")
            seed(conn)
            old_before = conn.execute(
                "SELECT count(*) FROM extraction_events WHERE run_id LIKE 'old-%%'"
            ).fetchone()[0]  # type: ignore[index]
            total_before = conn.execute("SELECT count(*) FROM extraction_events").fetchone()[0]  # type: ignore[index]
            conn.commit()
            print(f"  extraction_events: {total_before:,} rows, {old_before:,} of them 60 days old")
            rng = random.Random(11)
            workspaces = list_workspaces(conn)
            alone = [health_once(conn, rng.choice(workspaces)) for _ in range(SAMPLES_ALONE)]

            retention = Retention(
                ProviderDatabase.from_dsn(dsn), RetentionPolicy(events_days=30, batch_size=5000)
            )
            outcome: dict = {}

            def purge() -> None:
                started = time.perf_counter()
                outcome["report"] = retention.run(now=datetime(2026, 11, 30, 15, 0, tzinfo=timezone.utc))
                outcome["seconds"] = time.perf_counter() - started

            worker = threading.Thread(target=purge)
            worker.start()
            during = []
            while worker.is_alive():
                during.append(health_once(conn, rng.choice(workspaces)))
            worker.join()
            left_old = conn.execute(
                "SELECT count(*) FROM extraction_events WHERE run_id LIKE 'old-%%'"
            ).fetchone()[0]  # type: ignore[index]
            total_after = conn.execute("SELECT count(*) FROM extraction_events").fetchone()[0]  # type: ignore[index]
            conn.commit()

        deleted = outcome["report"].deleted["extraction_events"]
        seconds = outcome["seconds"]
        alone_p95, during_p95 = p95(alone), p95(during)
        correct = deleted == old_before and left_old == 0 and total_after == total_before - old_before
        print()
        print(
            f"purge: {deleted:,} old events deleted in {seconds:.1f} s ({deleted / seconds:,.0f} rows/s), "
            f"{total_after:,} recent events left -> {'ok' if correct else 'MISSED (wrong rows deleted)'}"
        )
        print(
            f"health query p95 alone:        {alone_p95 * 1000:6.1f} ms "
            f"(median {statistics.median(alone) * 1000:.1f} ms, {len(alone)} runs)"
        )
        print(
            f"health query p95 during purge: {during_p95 * 1000:6.1f} ms "
            f"(median {statistics.median(during) * 1000:.1f} ms, {len(during)} runs); "
            f"{during_p95 / alone_p95:.2f}x alone"
        )
        kept = during_p95 <= BUDGET
        print(
            f"target: health p95 during the purge <= {BUDGET * 1000:.0f} ms (the one-workspace budget): "
            f"{during_p95 / BUDGET:.2f} of the budget -> {'OK' if kept else 'MISSED'}"
        )
        return 0 if kept and correct else 1
    finally:
        try:
            server.drop_database(database)
        finally:
            server.stop()


if __name__ == "__main__":
    raise SystemExit(main())
