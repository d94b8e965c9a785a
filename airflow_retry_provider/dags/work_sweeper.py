"""The work-unit sweeper: one long-running task an hour that sweeps every 30 seconds for 55 minutes.

Off by default (``[retry_provider] work_sweeper_enabled = false``: the task is skipped at once). While
on, it finds work units left ``running`` past their lease, looks their remote job up by its
deterministic id, completes or fails them, and parks for a person what it cannot settle (see
``airflow_retry_provider.maintenance.work_sweeper`` and docs/OPERATIONS.md for why a looping task).
Importing this module touches neither a database nor the network.
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import DAG, task

SWEEP_FOR = timedelta(minutes=55)  # the next hourly run starts soon after this one ends

with DAG(
    dag_id="retry_provider_work_sweeper",
    schedule="@hourly",
    start_date=pendulum.datetime(2026, 1, 1, tz="America/Sao_Paulo"),
    catchup=False,
    max_active_runs=1,
    tags=["airflow-retry-provider-maintenance"],
    default_args={"retries": 1, "retry_delay": timedelta(minutes=1)},
    doc_md=__doc__,
) as dag:

    @task(execution_timeout=SWEEP_FOR + timedelta(minutes=4))
    def sweep_work_units() -> dict:
        """Sweep stale work units every [retry_provider] work_sweeper_interval_seconds for 55 minutes."""
        from airflow_retry_provider.maintenance.work_sweeper import run_work_sweeper

        return run_work_sweeper(SWEEP_FOR)

    sweep_work_units()
