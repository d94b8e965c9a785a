"""Reads of the provider's database that only the tests and the benchmarks ask (not in the wheel).

The statements are ``provider.sql``, beside this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from airflow_retry_provider.dlq.models import FixNotice
from airflow_retry_provider.sql import parse_named

QUERIES = parse_named((Path(__file__).with_name("provider.sql")).read_text("utf-8"))


def _rows(dsn: str, statement: str, parameters: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    with psycopg.connect(dsn, row_factory=dict_row) as conn:
        return conn.execute(QUERIES[statement], parameters).fetchall()


def fix_notices(dsn: str) -> list[FixNotice]:
    """Every fix notice told, by DAG, fingerprint and version."""
    return [FixNotice.from_row(row) for row in _rows(dsn, "fix_notices")]


def impact_queue_counts(dsn: str) -> tuple[int, int]:
    """Letters awaiting their impact, and those whose impact was given up."""
    (row,) = _rows(dsn, "impact_queue_counts")
    return int(row["awaiting"]), int(row["gave_up"])


def infra_letter(dsn: str, dag_id: str, run_id: str) -> dict[str, Any] | None:
    """The ``infra`` letter of ``dag_id``'s run ``run_id`` (``created_at``, ``kind``: class/category), or None."""
    rows = _rows(dsn, "infra_letter", {"dag_id": dag_id, "run_id": run_id})
    return rows[0] if rows else None


def failed_tries_count(dsn: str) -> int:
    """How many failed tries ``retry_failed_tries`` holds."""
    (row,) = _rows(dsn, "failed_tries_count")
    return int(row["tries"])
