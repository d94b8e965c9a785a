"""bench/storm.py, without the provider: ``BENCH_TASKS`` mapped tasks fail at once with one poison cause
(native Airflow, no retry), upstream of a task that would deliver."""

from __future__ import annotations

import os

import pendulum
from airflow.sdk import DAG, task

with DAG(
    dag_id="storm_native",
    schedule=None,
    start_date=pendulum.datetime(2026, 11, 1, tz="UTC"),
    catchup=False,
    tags=["bench"],
):

    @task(retries=0)
    def load(partition: int) -> None:
        raise RuntimeError('relation "storm_orders" not found')

    @task
    def publish() -> None:
        """Blocked by every partition."""

    load.expand(partition=list(range(int(os.environ.get("BENCH_TASKS", "200"))))) >> publish()
