"""DAGs for the dead-letter queue's end-to-end tests in a real Airflow.

The first two are tagged ``airflow-retry-provider``, so the sweeper treats every task of them as
policy-managed. The last two are not managed and file no letter themselves: the tests sweep or
replay them into a database of their own.
"""

from __future__ import annotations

import time

import pendulum
from airflow.sdk import DAG, Variable, task

from airflow_retry_provider import apply_profile

START = pendulum.datetime(2026, 11, 1, tz="America/Sao_Paulo")
FIX_VARIABLE = "policy_fix_applied"
RELEASE_VARIABLE = "dlq_running_target_release"


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


CHAIN_FIX_VARIABLE = "chain_fix_applied"

with _dag("dlq_replay_chain") as chain_dag:

    @task
    def extract() -> str:
        """Always succeeds: a replay with only_failed never runs it again."""
        return "rows"

    @task
    def transform(rows: str) -> str:
        """Poison until the fix is deployed (the Variable says "yes"), then it succeeds."""
        if Variable.get(CHAIN_FIX_VARIABLE, default="no") != "yes":
            raise RuntimeError('relation "positions_chain" not found')
        return rows.upper()

    @task
    def publish(rows: str) -> str:
        """The delivery: upstream_failed until a replay finishes the run."""
        return f"published {rows}"

    publish(apply_profile(transform(extract()), "report"))


MANY_FIX_VARIABLE = "many_fix_applied"
MANY_PARTS = 20

with _dag("dlq_replay_many") as many_dag:
    for _n in range(MANY_PARTS):

        @task(task_id=f"part_{_n:02d}")
        def part() -> str:
            """Poison until the fix is deployed: twenty independent letters from one run."""
            if Variable.get(MANY_FIX_VARIABLE, default="no") != "yes":
                raise RuntimeError('relation "positions_parts" not found')
            return "loaded"

        apply_profile(part(), "report")


def _plain_dag(dag_id: str) -> DAG:
    return DAG(dag_id=dag_id, schedule=None, start_date=START, catchup=False, tags=["test"])


with _plain_dag("dlq_sweep_target") as sweep_target_dag:

    @task(retries=0)
    def fails_without_a_letter() -> None:
        """Fails with no dead-letter callback: only a sweep can file it."""
        raise RuntimeError("nothing files this failure but the sweeper")

    fails_without_a_letter()


with _plain_dag("dlq_running_target") as running_target_dag:

    @task(retries=0)
    def runs_until_released() -> None:
        """Keeps running until the release Variable says "yes" (at most five minutes), then fails."""
        deadline = time.monotonic() + 300
        while Variable.get(RELEASE_VARIABLE, default="no") != "yes" and time.monotonic() < deadline:
            time.sleep(1)
        raise RuntimeError("released")

    runs_until_released()
