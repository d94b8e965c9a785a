"""Create the provider's tables: one idempotent ``schema.sql``, safe to run twice."""

from __future__ import annotations

from importlib import resources
from typing import Any


def schema_sql() -> str:
    return resources.files("airflow_retry_provider.dlq.sql").joinpath("schema.sql").read_text("utf-8")


def apply_schema(conn: Any) -> None:
    """Run ``schema.sql`` on a DB-API connection (psycopg 3 or psycopg2) and commit."""
    cursor = conn.cursor()
    try:
        cursor.execute("SELECT pg_advisory_xact_lock(7311001)")  # two concurrent inits do not race
        cursor.execute(schema_sql())
    finally:
        cursor.close()
    conn.commit()
