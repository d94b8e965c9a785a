"""Named SQL of the plugin's reads: the ``-- name: x`` blocks of ``queries.sql``, run by ``plugin/queries.py``."""

from __future__ import annotations

from airflow_retry_provider import sql


def query(name: str) -> str:
    """One named statement of queries.sql; ``KeyError`` names an unknown one."""
    return sql.named(__name__)[name]
