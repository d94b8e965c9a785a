"""DAGs for the replay loop's faults in a real Airflow (tests/e2e/test_replay_faults.py).

``fault_upstream_again``: ``extract >> load``, where ``load`` is poison until its fix is deployed
and ``extract`` fails once a Variable says so (its upstream failing again after a replay).
``fault_parts``: eight independent poison tasks until their fix is deployed (one job of eight
letters). ``fault_unmanaged``: eight failures no callback files (only a sweep files them).
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, Variable, task

from airflow_retry_provider import apply_profile

START = pendulum.datetime(2026, 11, 1, tz="America/Sao_Paulo")
EXTRACT_BROKEN = "fault_extract_broken"
LOAD_FIXED = "fault_load_fixed"
PARTS_FIXED = "fault_parts_fixed"
PARTS = 8


def _dag(dag_id: str, managed: bool = True) -> DAG:
    tags = ["test", "airflow-retry-provider"] if managed else ["test"]
    return DAG(dag_id=dag_id, schedule=None, start_date=START, catchup=False, tags=tags)


with _dag("fault_upstream_again") as upstream_again_dag:

    @task(retries=0)
    def extract() -> str:
        """Succeeds, until the Variable says the source broke."""
        if Variable.get(EXTRACT_BROKEN, default="no") == "yes":
            raise RuntimeError('relation "fault_source" not found')
        return "rows"

    @task
    def load(rows: str) -> str:
        """Poison until its fix is deployed."""
        if Variable.get(LOAD_FIXED, default="no") != "yes":
            raise RuntimeError('relation "fault_target" not found')
        return rows

    apply_profile(load(apply_profile(extract(), "report")), "report")


with _dag("fault_parts") as parts_dag:
    for _n in range(PARTS):

        @task(task_id=f"part_{_n}")
        def part() -> str:
            """Poison until the fix is deployed: one of eight letters of one run."""
            if Variable.get(PARTS_FIXED, default="no") != "yes":
                raise RuntimeError('relation "fault_parts" not found')
            return "loaded"

        apply_profile(part(), "report")


with _dag("fault_unmanaged", managed=False) as unmanaged_dag:
    for _n in range(PARTS):

        @task(task_id=f"unfiled_{_n}", retries=0)
        def unfiled() -> None:
            """Fails with no dead-letter callback: only a sweep files it."""
            raise RuntimeError("nothing files this failure but the sweeper")

        unfiled()
