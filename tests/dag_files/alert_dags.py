"""DAGs for the alert e-mail tests: one poison failure, and thirty failures of one root cause."""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, task

from airflow_retry_provider import apply_profile

START = pendulum.datetime(2026, 11, 1, tz="America/Sao_Paulo")
STORM_SIZE = 30


def _dag(dag_id: str) -> DAG:
    return DAG(dag_id=dag_id, schedule=None, start_date=START, catchup=False, tags=["test", "alerts"])


with _dag("alerts_one_poison") as one_poison:

    @task
    def load_once() -> None:
        """Poison: a relation that does not exist."""
        raise RuntimeError('relation "alerts_once" not found')

    @task
    def publish() -> None:
        """Downstream of the poison task: blocked."""

    apply_profile(load_once(), "report") >> publish()


with _dag("alerts_poison_storm") as poison_storm:

    @task
    def load_partition() -> None:
        """Poison, the same root cause in every partition."""
        raise RuntimeError('column "storm_total" does not exist')

    for index in range(STORM_SIZE):
        apply_profile(load_partition.override(task_id=f"load_partition_{index:02d}")(), "report")
