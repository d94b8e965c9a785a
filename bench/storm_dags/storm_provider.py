"""bench/storm.py, with the provider: the same storm under ``apply_profile`` (a poison failure goes to the
dead-letter queue at once), the delivering task declaring its deadline."""

from __future__ import annotations

import os
from datetime import timedelta

import pendulum
from airflow.sdk import DAG, task

from airflow_retry_provider import DeliveryDeadline, apply_profile

with DAG(
    dag_id="storm_provider",
    schedule=None,
    start_date=pendulum.datetime(2026, 11, 1, tz="UTC"),
    catchup=False,
    tags=["bench"],
):

    @task
    def load(partition: int) -> None:
        raise RuntimeError('relation "storm_orders" not found')

    @task
    def publish() -> None:
        """Delivers by 09:00 UTC the day after the data interval: blocked by every partition."""

    partitions = apply_profile(
        load.expand(partition=list(range(int(os.environ.get("BENCH_TASKS", "200"))))), "report"
    )
    delivery = apply_profile(
        publish(),
        "report",
        deadline=DeliveryDeadline(at="09:00", timezone="UTC", days_after=1),
        expected_duration=timedelta(minutes=10),
    )
    partitions >> delivery
