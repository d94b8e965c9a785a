"""Create the reconciliation tables (trails and reports): one idempotent ``sql/trails.sql``."""

from __future__ import annotations

from typing import Any

from airflow_retry_provider.reconciliation.sql import query, trails_sql

__all__ = ["TRAIL_TABLES", "apply_trail_schema", "ensure_trail_schema", "missing_trail_tables"]

#: Every table ``trails.sql`` creates.
TRAIL_TABLES = (
    "source_runs",
    "bronze_tables",
    "transforms",
    "extraction_events",
    "expected_connectors",
    "reconciliation_reports",
    "reconciliation_findings",
)


def apply_trail_schema(conn: Any, *, commit: bool = True) -> None:
    """Run ``trails.sql`` on a DB-API connection (psycopg 3 or psycopg2).

    It takes the advisory lock ``dlq.schema.apply_schema`` takes, so concurrent inits do not race.

    :param conn: an open connection, not in autocommit mode.
    :param commit: commit at the end; ``False`` runs inside the caller's transaction (as
        ``apply_schema`` does).
    """
    cursor = conn.cursor()
    try:
        cursor.execute(trails_sql())
    finally:
        cursor.close()
    if commit:
        conn.commit()


def missing_trail_tables(conn: Any) -> list[str]:
    """The tables of ``trails.sql`` that do not exist yet (a catalogue query: no DDL, no lock)."""
    cursor = conn.cursor()
    try:
        cursor.execute(query("missing_trail_tables"), {"names": list(TRAIL_TABLES)})
        return [row[0] for row in cursor.fetchall()]
    finally:
        cursor.close()


def ensure_trail_schema(conn: Any) -> bool:
    """Apply ``trails.sql`` only if one of its tables is missing, and commit; return whether it ran.

    Cheap when the tables exist, so the reconciliation DAG calls it on every run and works on a
    database initialised before these tables were part of ``airflow-retry db init``.
    """
    missing = missing_trail_tables(conn)
    conn.commit()
    if not missing:
        return False
    apply_trail_schema(conn)
    return True
