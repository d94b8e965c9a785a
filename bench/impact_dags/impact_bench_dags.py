"""The impact benchmark's DAGs (bench/impact.py): issue 48's chain beside Airflow's own deadline alert.

``impact_bench_chain``: extract (poison) >> transform >> publish; publish delivers by a
``DeliveryDeadline`` and produces an asset that ``impact_bench_report`` is scheduled on. The same
deadline is given to Airflow as the DAG's ``deadline=DeadlineAlert(...)`` (reference: the run's
logical date; callback: Airflow's ``SmtpNotifier``, to the bench's SMTP server), so both alerts are
about one run and one instant. The benchmark sets, before the stack starts:

- ``BENCH_IMPACT_AT``: the deadline's ``HH:MM`` (UTC);
- ``BENCH_IMPACT_DAYS_AFTER``: its days after the run's logical date;
- ``BENCH_IMPACT_LEAD_SECONDS``: the deadline's distance from that logical date (Airflow's interval).
"""

from __future__ import annotations

import os
from datetime import timedelta

import pendulum
from airflow.providers.smtp.notifications.smtp import SmtpNotifier
from airflow.sdk import DAG, Asset, task
from airflow.sdk.definitions.callback import AsyncCallback
from airflow.sdk.definitions.deadline import DeadlineAlert, DeadlineReference

from airflow_retry_provider import DeliveryDeadline, apply_profile

START = pendulum.datetime(2026, 11, 1, tz="UTC")
ORDERS = Asset("impact_bench_orders")
AT = os.environ.get("BENCH_IMPACT_AT", "09:00")
DAYS_AFTER = int(os.environ.get("BENCH_IMPACT_DAYS_AFTER", "1"))
LEAD = timedelta(seconds=int(os.environ.get("BENCH_IMPACT_LEAD_SECONDS", "86400")))

AIRFLOW_DEADLINE = DeadlineAlert(
    reference=DeadlineReference.DAGRUN_LOGICAL_DATE,
    interval=LEAD,
    callback=AsyncCallback(
        SmtpNotifier,
        kwargs={
            "to": "oncall@example.test",
            "smtp_conn_id": "smtp_alerts",
            "subject": "Airflow deadline missed: impact_bench_chain",
            "html_content": "The run of impact_bench_chain missed its deadline.",
        },
    ),
)

with DAG(
    dag_id="impact_bench_chain",
    schedule=None,
    start_date=START,
    catchup=False,
    deadline=AIRFLOW_DEADLINE,
    tags=["bench", "impact"],
):

    @task
    def extract() -> None:
        """Poison: a relation that does not exist."""
        raise RuntimeError('relation "bench_orders" not found')

    @task
    def transform() -> None:
        """Blocked by extract."""

    @task(outlets=[ORDERS])
    def publish() -> None:
        """Delivers by the deadline; produces the asset."""

    first = apply_profile(extract(), "report")
    second = apply_profile(transform(), "report", expected_duration=timedelta(minutes=1))
    last = apply_profile(
        publish(),
        "report",
        deadline=DeliveryDeadline(at=AT, timezone="UTC", days_after=DAYS_AFTER),
        expected_duration=timedelta(minutes=1),
        validation=timedelta(minutes=1),
    )
    first >> second >> last


with DAG(
    dag_id="impact_bench_report",
    schedule=[ORDERS],
    start_date=START,
    catchup=False,
    tags=["bench", "impact"],
    params={"workspace_id": "acme"},
):

    @task
    def report() -> None:
        """Runs when the asset is produced."""

    report()
