"""Retention: every day at 03:30 America/Sao_Paulo, delete rows past their age in bounded batches.

Resolved and dismissed letters with their replays (90 days), reconciliation reports with their
findings and artifact files (30 days, each workspace's latest kept), extraction events (30 days),
finished ledger rows outside the dedup window (30 days), sent alerts (30 days). Ages come from
the ``[retry_provider] retention_*`` settings; ``airflow-retry retention --dry-run`` shows what a run would delete.
Importing this module touches neither a database nor the network.
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import DAG, task

with DAG(
    dag_id="retry_provider_retention",
    schedule="30 3 * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="America/Sao_Paulo"),
    catchup=False,
    max_active_runs=1,
    tags=["airflow-retry-provider-maintenance"],
    default_args={"retries": 2, "retry_delay": timedelta(minutes=10)},
    doc_md=__doc__,
) as dag:

    @task(execution_timeout=timedelta(hours=2))
    def purge_old_rows() -> dict:
        """Delete what is past its age and record the counts per table."""
        from airflow_retry_provider.maintenance.retention import run_retention

        return run_retention()

    purge_old_rows()
