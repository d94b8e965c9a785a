"""bench/storm.py --dags, with the provider: the same ``BENCH_DAGS`` DAGs under ``apply_profile`` (a poison
failure goes to the dead-letter queue at once), each delivering task declaring its deadline."""

from __future__ import annotations

import os
from datetime import timedelta

import pendulum
from airflow.sdk import DAG, task

from airflow_retry_provider import DeliveryDeadline, apply_profile

for number in range(int(os.environ.get("BENCH_DAGS", "0"))):
    with DAG(
        dag_id=f"storm_provider_{number:04d}",
        schedule=None,
        start_date=pendulum.datetime(2026, 11, 1, tz="UTC"),
        catchup=False,
        tags=["bench"],
    ):

        @task
        def load() -> None:
            raise RuntimeError('relation "storm_orders" not found')

        @task
        def publish() -> None:
            """Delivers by 09:00 UTC the day after the data interval: blocked by the load."""

        delivery = apply_profile(
            publish(),
            "report",
            deadline=DeliveryDeadline(at="09:00", timezone="UTC", days_after=1),
            expected_duration=timedelta(minutes=10),
        )
        apply_profile(load(), "report") >> delivery
