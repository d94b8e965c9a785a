"""DAGs whose retry policy is composed: ClassifiedRetryPolicy beside another policy (Airflow 3.4's chain).

On Airflow 3.3 (no ``ChainRetryPolicy``) the module defines nothing: the tests that use it skip.
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import DAG, ExceptionRetryPolicy, RetryAction, RetryRule, task

from airflow_retry_provider import Backoff, ClassifiedRetryPolicy, apply_profile
from airflow_retry_provider.airflow_compat import chain_policy
from airflow_retry_provider.dlq.callback import file_dead_letter

# a bundle's files import nothing of the repository's tests/ (tests/dags/test_bundles_parse.py)
FAST = Backoff(base=timedelta(seconds=1), multiplier=2, cap=timedelta(seconds=4), jitter=0.25)
START = pendulum.datetime(2026, 11, 1, tz="America/Sao_Paulo")
ChainRetryPolicy = chain_policy()
# the author's own rule: a permission error is never worth a retry
DENIED = ExceptionRetryPolicy(
    rules=[
        RetryRule(
            exception=PermissionError,
            action=RetryAction.FAIL,
            reason="no access: fix the grant, password=hunter2",
        )
    ]
)


def _dag(dag_id: str) -> DAG:
    return DAG(dag_id=dag_id, schedule=None, start_date=START, catchup=False, tags=["test"])


if ChainRetryPolicy is not None:
    with _dag("composed_chain_classifies") as chain_dag:

        @task(
            retries=2,
            retry_policy=ChainRetryPolicy([DENIED, ClassifiedRetryPolicy("report", backoff=FAST)]),
            on_failure_callback=file_dead_letter,
        )
        def poison_in_chain() -> None:
            raise RuntimeError('relation "positions_v2" not found')

        poison_in_chain()

    with _dag("composed_author_policy_decides") as author_dag:

        @task(retry_policy=DENIED)
        def denied() -> None:
            raise PermissionError("role etl_reader may not read positions")

        apply_profile(denied(), "report", backoff=FAST)
