"""DAGs for the dead-letter queue's end-to-end tests in a real Airflow.

Both are tagged ``airflow-retry-provider``, so the sweeper treats every task of them as policy-managed.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, Variable, task

from airflow_retry_provider import apply_profile

START = pendulum.datetime(2026, 11, 1, tz="America/Sao_Paulo")
FIX_VARIABLE = "policy_fix_applied"


def _dag(dag_id: str) -> DAG:
    return DAG(
        dag_id=dag_id,
        schedule=None,
        start_date=START,
        catchup=False,
        tags=["test", "airflow-retry-provider"],
    )


with _dag("dlq_fix_by_variable") as fix_dag:

    @task
    def load_positions() -> str:
        """Poison until the fix is deployed (the Variable says "yes"), then it succeeds."""
        if Variable.get(FIX_VARIABLE, default="no") != "yes":
            raise RuntimeError('relation "positions_v3" not found')
        return "loaded"

    apply_profile(load_positions(), "report")


with _dag("dlq_sweeper_probe") as probe_dag:

    @task
    def always_poison() -> None:
        """A poison failure whose callback may find the provider's database unreachable."""
        raise RuntimeError('relation "positions_probe" not found')

    apply_profile(always_poison(), "report")
