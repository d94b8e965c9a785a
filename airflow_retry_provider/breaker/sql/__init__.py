"""Named SQL of the breakers: the ``-- name: x`` blocks of ``queries.sql`` (the tables: ``migrations/``)."""

from __future__ import annotations

from airflow_retry_provider import sql


def query(name: str) -> str:
    """One named statement of queries.sql; ``KeyError`` names an unknown one."""
    return sql.named(__name__)[name]
