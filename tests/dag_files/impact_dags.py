"""DAGs for the impact proof (issue 48): a chain of three tasks whose last one delivers by a
deadline and produces an asset, and a second DAG scheduled on that asset, with a DAG-level
delivery and a workspace. The chain's first task fails with a poison error until the Variable
``impact_chain_fixed`` says "yes" (the fix)."""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import DAG, Asset, Variable, task

from airflow_retry_provider import DeliveryDeadline, apply_profile

START = pendulum.datetime(2026, 11, 1, tz="UTC")
SILVER = Asset("impact_silver_orders")
FIX_VARIABLE = "impact_chain_fixed"

with DAG(dag_id="impact_chain", schedule=None, start_date=START, catchup=False, tags=["test", "impact"]):

    @task
    def extract() -> None:
        """Poison (a relation that does not exist) until the fix is deployed."""
        if Variable.get(FIX_VARIABLE, default="no") != "yes":
            raise RuntimeError('relation "impact_orders" not found')

    @task
    def transform() -> None:
        """Blocked by extract."""

    @task(outlets=[SILVER])
    def publish() -> None:
        """Delivers by 09:00 UTC the day after the data interval; produces the asset."""

    first = apply_profile(extract(), "report")
    second = apply_profile(transform(), "report", expected_duration=timedelta(minutes=20))
    last = apply_profile(
        publish(),
        "report",
        deadline=DeliveryDeadline(at="09:00", timezone="UTC", days_after=1),
        expected_duration=timedelta(minutes=10),
        validation=timedelta(minutes=5),
    )
    first >> second >> last


with DAG(
    dag_id="impact_gold_report",
    schedule=[SILVER],
    start_date=START,
    catchup=False,
    tags=["test", "impact"],
    params={
        "retry_provider_delivery": {"at": "10:00", "timezone": "UTC", "days_after": 1},
        "workspace_id": "acme",
    },
):

    @task
    def build() -> None:
        """Runs when the asset is produced."""

    @task
    def report() -> None:
        """The DAG's last task: its delivery."""

    build() >> report()
