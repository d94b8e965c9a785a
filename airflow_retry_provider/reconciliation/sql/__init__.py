"""Named SQL for reconciliation: ``trails.sql`` (the tables) and ``queries.sql`` (``-- name: x`` blocks)."""

from __future__ import annotations

from airflow_retry_provider import sql

__all__ = ["queries", "query", "trails_sql"]


def queries() -> dict[str, str]:
    """Every named statement of ``queries.sql``."""
    return sql.named(__name__)


def query(name: str) -> str:
    """One named statement of ``queries.sql``; ``KeyError`` names an unknown one."""
    return queries()[name]


def trails_sql() -> str:
    """The idempotent ``CREATE ... IF NOT EXISTS`` script of the trail and report tables."""
    return sql.read(__name__, "trails.sql")
