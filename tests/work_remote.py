"""A remote system for the work-unit sweeper's tests: jobs in a PostgreSQL table, looked up by id."""

from __future__ import annotations

import os
from typing import Any

import psycopg

from airflow_retry_provider.operators.remote_jobs import RemoteJob

DSN_ENV = "TEST_REMOTE_JOBS_DSN"
CREATE = (
    "CREATE TABLE IF NOT EXISTS test_remote_jobs (job_id text PRIMARY KEY, state text NOT NULL, error text)"
)


def lookup(remote_job_id: str, unit: Any) -> RemoteJob | None:
    """The job as the remote side reports it; None when it has no such job."""
    with psycopg.connect(os.environ[DSN_ENV]) as conn:
        row = conn.execute(
            "SELECT state, error FROM test_remote_jobs WHERE job_id = %s", (remote_job_id,)
        ).fetchone()
    if row is None:
        return None
    return RemoteJob(
        remote_job_id, row[0], error=row[1], result={"job": remote_job_id} if row[0] == "succeeded" else None
    )
