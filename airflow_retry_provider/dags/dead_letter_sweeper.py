"""The dead-letter sweeper: every 10 minutes, file failures no callback could file, sync replays, send alerts, emit gauges.

Policy-managed DAGs are those tagged ``airflow-retry-provider`` or listed in the Variable
``airflow_retry_dlq_sweep_dags``; the sweeper reads Airflow through its REST API (connection
``retry_provider_airflow_api``) and writes through ``retry_provider_default``. Importing this
module touches neither a database nor the network.
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import DAG, task

with DAG(
    dag_id="dead_letter_sweeper",
    schedule="*/10 * * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="America/Sao_Paulo"),
    catchup=False,
    max_active_runs=1,
    tags=["airflow-retry-provider-maintenance", "dlq"],
    default_args={"retries": 1, "retry_delay": timedelta(minutes=1)},
    doc_md=__doc__,
) as dag:

    @task(execution_timeout=timedelta(minutes=8))
    def sweep_dead_letters() -> dict:
        """File failed task instances of policy-managed DAGs that have no letter; sync replay outcomes."""
        from airflow_retry_provider.dlq import run_sweeper

        return run_sweeper()

    @task(execution_timeout=timedelta(minutes=5))
    def send_alerts() -> dict:
        """Send the summaries of ended root-cause windows and retry messages a notifier failed to send."""
        from airflow_retry_provider.alerts import run_alerts

        return run_alerts()

    @task(execution_timeout=timedelta(minutes=2))
    def emit_gauges() -> dict:
        """Queue gauges (letters by status, oldest dlq letter, expired leases, ...) through Airflow's Stats."""
        from airflow_retry_provider.maintenance.gauges import emit_gauges

        return emit_gauges()

    sweep_dead_letters()
    send_alerts()
    emit_gauges()
