"""What the dead-letter tests share: a letter of the factory with a fixed fingerprint, and a table's rows."""

from __future__ import annotations

from typing import Any

import psycopg

from airflow_retry_provider.dlq.driver import ReplayDriver
from airflow_retry_provider.dlq.models import NewLetter
from tests.factories import new_letter

SECRET = "hunter2-Secr3t"


def letter(task_id: str = "load", try_number: int = 1, dag_id: str = "etl", run_id: str = "r1") -> NewLetter:
    """``etl.load`` of run ``r1`` (try 1) unless told otherwise, fingerprint ``f`` * 16."""
    return new_letter(
        task_id=task_id, try_number=try_number, dag_id=dag_id, run_id=run_id, fingerprint="f" * 16
    )


def rows(dsn: str, table: str = "retry_dead_letters") -> list[dict[str, Any]]:
    """Every row of ``table``, in id order, as dicts by column name."""
    with psycopg.connect(dsn) as conn:
        cur = conn.execute(f"SELECT * FROM {table} ORDER BY id")  # noqa: S608 - fixed table names in tests
        names = [c.name for c in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def drive_one(driver: ReplayDriver) -> int | None:
    """Claim the oldest open job and drive it here until the driver leaves it (what a drain does for one
    job, without settling claims first); its id, or None when no job is open."""
    turn = driver.jobs.claim(driver.owner, driver.lease_seconds)
    if turn is None:
        return None
    driver._drive(turn, None, 0)
    return turn.job.id


def open_job_ids(dsn: str) -> list[int]:
    """The ids of the replay jobs queued or running, in id order."""
    with psycopg.connect(dsn) as conn:
        cur = conn.execute(
            "SELECT id FROM retry_replay_jobs WHERE status IN ('queued', 'running') ORDER BY id"
        )
        return [int(row[0]) for row in cur.fetchall()]
