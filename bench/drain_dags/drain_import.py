"""bench/drain.py, variant 2: plain Airflow, with the provider imported by the DAG file (what the import costs)."""

from __future__ import annotations

import os
from datetime import timedelta

import pendulum
from airflow.sdk import DAG, task

import airflow_retry_provider  # noqa: F401  # the cost measured: imported, not used
import airflow_retry_provider.retry_policy  # noqa: F401

with DAG(
    dag_id="drain_import",
    schedule=None,
    start_date=pendulum.datetime(2026, 11, 1, tz="America/Sao_Paulo"),
    catchup=False,
    tags=["bench"],
):

    @task(retries=1, retry_delay=timedelta(seconds=1))
    def work(number: int, ti=None) -> int:
        if ti.try_number == 1:
            raise ConnectionResetError(104, "Connection reset by peer")
        return number

    work.expand(number=list(range(int(os.environ.get("BENCH_TASKS", "200")))))
