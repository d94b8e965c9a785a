"""A DAG under ``apply_profile`` where nothing is replayed: tries that succeed at once or after retries.

``tests/dags/test_happy_path.py`` runs it with ``dag.test()`` against a provider connection that
counts every connection made to it: a success that is not a replay must open none.
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import DAG, task

from airflow_retry_provider import ClassifiedRetryPolicy, apply_profile
from airflow_retry_provider.policy import Backoff

ONE_SECOND = Backoff(base=timedelta(seconds=1), multiplier=1, cap=timedelta(seconds=1), jitter=0)


def _fail_before(try_number: int, ti) -> int:
    """Tries before ``try_number`` lose their connection (retryable); that try succeeds."""
    if ti.try_number < try_number:
        raise ConnectionResetError(104, "Connection reset by peer")
    return ti.try_number


with DAG(
    dag_id="happy_path_under_profile",
    schedule=None,
    start_date=pendulum.datetime(2026, 11, 1, tz="America/Sao_Paulo"),
    catchup=False,
    tags=["test"],
    default_args=apply_profile({}, "dashboard", backoff=ONE_SECOND),
) as happy_dag:

    @task
    def succeeds() -> str:
        return "ok"

    @task
    def fails_once(ti=None) -> int:
        return _fail_before(2, ti)

    @task
    def mapped_fails_once(number: int, ti=None) -> int:
        return _fail_before(2, ti)

    # opted out of the profile's retries: retries=0 alone would contradict it (an error at parse)
    @task(retries=0, retry_policy=None)
    def no_retries() -> str:
        return "ok"

    # its own retries and a policy without a profile (max_attempts = retries + 1), callbacks from default_args
    @task(retries=3, retry_policy=ClassifiedRetryPolicy(backoff=ONE_SECOND))
    def more_retries(ti=None) -> int:
        return _fail_before(3, ti)

    succeeds()
    fails_once()
    mapped_fails_once.expand(number=[1, 2, 3])
    no_retries()
    more_retries()
