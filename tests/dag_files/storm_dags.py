"""DAGs for the storm proof (issue 58): 200 mapped tasks failing at once with one poison cause, upstream
of a task that delivers by a deadline (so the storm puts one delivery at risk); and 30 failing while the
provider's PostgreSQL is down (``storm_database_outage``)."""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import DAG, task

from airflow_retry_provider import DeliveryDeadline, apply_profile
from airflow_retry_provider.policy import Backoff

START = pendulum.datetime(2026, 11, 1, tz="UTC")
STORM_SIZE = 200
FIVE_SECONDS = Backoff(base=timedelta(seconds=5), multiplier=1, cap=timedelta(seconds=5), jitter=0)

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


with DAG(dag_id="storm_outage", schedule=None, start_date=START, catchup=False, tags=["test", "storm"]):

    @task
    def load(partition: int) -> None:
        """Poison while the api-server is down: a credential revoked under every partition."""
        raise RuntimeError('permission denied for table "storm_outage_orders"')

    @task
    def publish() -> None:
        """Delivers by 09:00 UTC the day after the data interval."""

    # a try the api-server's outage kept from starting fails without an exception (Airflow's retry_delay,
    # the backoff's base, not the policy): 5 s here, not the report profile's 5 min
    outage_partitions = apply_profile(
        load.expand(partition=list(range(STORM_SIZE))), "report", backoff=FIVE_SECONDS
    )
    outage_delivery = apply_profile(
        publish(),
        "report",
        deadline=DeliveryDeadline(at="09:00", timezone="UTC", days_after=1),
        expected_duration=timedelta(minutes=10),
    )
    outage_partitions >> outage_delivery


DATABASE_OUTAGE_SIZE = 30

with DAG(
    dag_id="storm_database_outage", schedule=None, start_date=START, catchup=False, tags=["test", "storm"]
):

    @task
    def load(partition: int) -> None:
        """Poison while the provider's PostgreSQL is down: a table dropped under every partition."""
        raise RuntimeError('relation "storm_database_orders" not found')

    apply_profile(load.expand(partition=list(range(DATABASE_OUTAGE_SIZE))), "report")
