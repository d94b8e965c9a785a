"""DAGs of the lineage e2e test (tests/e2e/test_lineage.py): a retried try, and a poison task fixed by a Variable."""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import DAG, Variable, task

from airflow_retry_provider import apply_profile
from airflow_retry_provider.policy import Backoff

ONE_SECOND = Backoff(base=timedelta(seconds=1), multiplier=1, cap=timedelta(seconds=1), jitter=0)
FIX_VARIABLE = "lineage_fix_applied"

with DAG(
    dag_id="lineage_retry_and_letter",
    schedule=None,
    start_date=pendulum.datetime(2026, 11, 1, tz="America/Sao_Paulo"),
    catchup=False,
    tags=["test", "airflow-retry-provider"],
) as dag:

    @task
    def export_positions(ti=None) -> int:
        """Try 1 loses its connection (retryable); try 2 succeeds."""
        if ti.try_number < 2:
            raise ConnectionResetError(104, "Connection reset by peer")
        return ti.try_number

    @task
    def load_positions() -> str:
        """Poison until the fix is deployed (the Variable says "yes"), then it succeeds."""
        if Variable.get(FIX_VARIABLE, default="no") != "yes":
            raise RuntimeError('relation "positions_lineage" not found')
        return "loaded"

    apply_profile(export_positions(), "report", backoff=ONE_SECOND)
    apply_profile(load_positions(), "report", backoff=ONE_SECOND)
