"""The reconciliation tables (trails and reports), created by the provider's migrations."""

from __future__ import annotations

from typing import Any

from airflow_retry_provider.reconciliation.sql import query

__all__ = ["TRAIL_TABLES", "apply_trail_schema", "ensure_trail_schema", "missing_trail_tables"]

#: Every trail and report table (``migrations/0001_initial.sql``).
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
    """Bring the provider's schema, which holds these tables, to the newest version.

    :param conn: an open connection (psycopg 3 or psycopg2), not in autocommit mode.
    :param commit: commit at the end; ``False`` runs inside the caller's transaction.
    """
    from airflow_retry_provider import migrations

    migrations.upgrade(conn, commit=commit)


def missing_trail_tables(conn: Any) -> list[str]:
    """The tables of ``TRAIL_TABLES`` that do not exist yet (a catalogue query: no DDL, no lock)."""
    with conn.cursor() as cursor:
        cursor.execute(query("missing_trail_tables"), {"names": list(TRAIL_TABLES)})
        return [row[0] for row in cursor.fetchall()]


def ensure_trail_schema(conn: Any) -> bool:
    """Upgrade the schema only if one of these tables is missing, and commit; return whether it ran.

    Cheap when the tables exist, so the reconciliation DAG calls it on every run and works on a
    database initialised before these tables were part of ``airflow-retry db upgrade``.
    """
    missing = missing_trail_tables(conn)
    conn.commit()
    if not missing:
        return False
    apply_trail_schema(conn)
    return True
