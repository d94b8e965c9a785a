"""bench/storm.py --dags, without the provider: ``BENCH_DAGS`` DAGs whose one task fails with the same
poison cause (native Airflow, no retry), each upstream of a task that would deliver."""

from __future__ import annotations

import os

import pendulum
from airflow.sdk import DAG, task

for number in range(int(os.environ.get("BENCH_DAGS", "0"))):
    with DAG(
        dag_id=f"storm_native_{number:04d}",
        schedule=None,
        start_date=pendulum.datetime(2026, 11, 1, tz="UTC"),
        catchup=False,
        tags=["bench"],
    ):

        @task(retries=0)
        def load() -> None:
            raise RuntimeError('relation "storm_orders" not found')

        @task
        def publish() -> None:
            """Blocked by the load."""

        load() >> publish()
