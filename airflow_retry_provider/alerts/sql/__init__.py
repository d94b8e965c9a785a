"""Named SQL of the alerts: the blocks of ``queries.sql`` (the tables: migrations/0002)."""

from __future__ import annotations

from airflow_retry_provider import sql


def query(name: str) -> str:
    """One named statement of queries.sql; ``KeyError`` names an unknown one."""
    return sql.named(__name__)[name]
