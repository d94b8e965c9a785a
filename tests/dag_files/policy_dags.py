"""DAGs the tests run with ``dag.test()`` and in a real Airflow: each one failure story.

Backoff bases are a second or two so the suite stays fast; everything else is the real policy.
"""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pendulum
from airflow.sdk import DAG, task

from airflow_retry_provider import apply_profile
from airflow_retry_provider.ledger import idempotent
from airflow_retry_provider.policy import Backoff

FAST = Backoff(base=timedelta(seconds=1), multiplier=2, cap=timedelta(seconds=4), jitter=0.25)
START = pendulum.datetime(2026, 11, 1, tz="America/Sao_Paulo")


def _dag(dag_id: str, **kwargs) -> DAG:
    return DAG(dag_id=dag_id, schedule=None, start_date=START, catchup=False, tags=["test"], **kwargs)


with _dag("policy_poison_between_valid") as poison_dag:

    @task
    def valid_before() -> str:
        return "ok"

    @task
    def invalid_job() -> None:
        raise RuntimeError('relation "positions_v2" not found')

    @task
    def valid_after() -> str:
        return "ok"

    for call in (valid_before(), invalid_job(), valid_after()):
        apply_profile(call, "report", backoff=FAST)


with _dag("policy_transient_recovers") as transient_dag:

    @task
    def flaky(ti=None) -> int:
        if ti.try_number < 3:
            raise ConnectionResetError(104, "Connection reset by peer")
        return ti.try_number

    apply_profile(flaky(), "report", backoff=FAST)


with _dag("policy_profile_ceilings") as ceilings_dag:
    for name in ("dashboard", "report", "pipeline"):

        @task(task_id=f"always_503_{name}")
        def always_503() -> None:
            raise RuntimeError("503 Service Unavailable from upstream")

        apply_profile(always_503(), name, backoff=FAST)


with _dag("policy_poison_input_and_safe_timeouts") as classified_dag:

    @task
    def bad_payload() -> None:
        json.loads('{"order": 7, "amount": ')  # JSONDecodeError: the same payload fails the same way

    @task(execution_timeout=timedelta(seconds=1))
    def slow_report(ti=None) -> int:
        if ti.try_number == 1:
            time.sleep(10)  # killed by execution_timeout: AirflowTaskTimeout, an unknown outcome
        return ti.try_number

    @task(execution_timeout=timedelta(seconds=1))
    @idempotent(version="v1")
    def slow_idempotent_write(ti=None) -> int:
        if ti.try_number == 1:
            time.sleep(10)  # under the ledger: safe to repeat even in a pipeline
        return ti.try_number

    @task(execution_timeout=timedelta(seconds=1))
    def slow_pipeline_write() -> None:
        time.sleep(10)  # a plain pipeline write: not safe to repeat

    apply_profile(bad_payload(), "pipeline", backoff=FAST)
    apply_profile(slow_report(), "report", backoff=FAST)
    apply_profile(slow_idempotent_write(), "pipeline", backoff=FAST)
    apply_profile(slow_pipeline_write(), "pipeline", backoff=FAST)
