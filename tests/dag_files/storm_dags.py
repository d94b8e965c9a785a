"""DAGs for the storm proof (issue 58): 200 mapped tasks failing at once with one poison cause, upstream
of a task that delivers by a deadline (so the storm puts one delivery at risk)."""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import DAG, task

from airflow_retry_provider import DeliveryDeadline, apply_profile

START = pendulum.datetime(2026, 11, 1, tz="UTC")
STORM_SIZE = 200

with DAG(dag_id="storm_mapped", schedule=None, start_date=START, catchup=False, tags=["test", "storm"]):

    @task
    def load(partition: int) -> None:
        """Poison, the same root cause in every partition: a table dropped under all of them."""
        raise RuntimeError('relation "storm_orders" not found')

    @task
    def publish() -> None:
        """Delivers by 09:00 UTC the day after the data interval: blocked by every partition."""

    partitions = apply_profile(load.expand(partition=list(range(STORM_SIZE))), "report")
    delivery = apply_profile(
        publish(),
        "report",
        deadline=DeliveryDeadline(at="09:00", timezone="UTC", days_after=1),
        expected_duration=timedelta(minutes=10),
    )
    partitions >> delivery
