"""The provider's schema: every table (dead letters, ledger, trails), brought to the newest version."""

from __future__ import annotations

from typing import Any


def apply_schema(conn: Any) -> tuple[int, int]:
    """Run the pending migrations (``airflow_retry_provider/migrations``) and commit; safe twice.

    :param conn: an open DB-API connection (psycopg 3 or psycopg2), not in autocommit mode.
    :return: the schema version before and after.
    """
    from airflow_retry_provider import migrations

    return migrations.upgrade(conn)
