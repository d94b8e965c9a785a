"""Named SQL of the dead-letter queue: the ``-- name: x`` blocks of ``queries.sql`` (the tables: ``migrations/``)."""

from __future__ import annotations

from airflow_retry_provider import sql


def queries() -> dict[str, str]:
    """Every named statement of queries.sql."""
    return sql.named(__name__)


def query(name: str) -> str:
    """One named statement of queries.sql; ``KeyError`` names an unknown one."""
    return queries()[name]
