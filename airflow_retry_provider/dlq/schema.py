"""Create the provider's tables: one idempotent ``schema.sql``, safe to run twice."""

from __future__ import annotations

from typing import Any


def schema_sql() -> str:
    """The idempotent ``dlq/sql/schema.sql``."""
    from airflow_retry_provider import sql

    return sql.read("airflow_retry_provider.dlq.sql", "schema.sql")


def apply_schema(conn: Any) -> None:
    """Create every table of the provider (dead letters, medallion trails) in one transaction and commit."""
    from airflow_retry_provider.ledger.sql import ledger_sql
    from airflow_retry_provider.reconciliation.schema import apply_trail_schema

    cursor = conn.cursor()
    try:
        cursor.execute("SELECT pg_advisory_xact_lock(7311001)")  # two concurrent inits do not race
        cursor.execute(schema_sql())
        cursor.execute(ledger_sql())
    finally:
        cursor.close()
    apply_trail_schema(conn, commit=False)
    conn.commit()
