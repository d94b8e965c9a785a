"""The DAGs bench/distributed.py runs (a DAG folder of their own, so `make bench` never runs them).

``bench_native`` and ``bench_policy`` are the same 200 (``BENCH_TASKS``) mapped tasks that fail once with a
retryable error and then succeed: one with Airflow's native retries (``retries=1``,
``retry_delay`` 1 s), one with the provider's profile (policy and DLQ callbacks) and a 1 s
backoff. ``bench_poison`` is 1,000 (``BENCH_POISON_TASKS``) poison failures for the DLQ.
"""

from __future__ import annotations

import os
from datetime import timedelta

import pendulum
from airflow.sdk import DAG, task

from airflow_retry_provider import apply_profile
from airflow_retry_provider.policy import Backoff

TASKS = int(os.environ.get("BENCH_TASKS", "200"))
ONE_SECOND = Backoff(base=timedelta(seconds=1), multiplier=1, cap=timedelta(seconds=1), jitter=0)
START = pendulum.datetime(2026, 11, 1, tz="America/Sao_Paulo")


def _dag(dag_id: str) -> DAG:
    return DAG(dag_id=dag_id, schedule=None, start_date=START, catchup=False, tags=["bench"])


def fail_once(ti) -> int:
    """Try 1: the connection is reset (retryable); try 2 succeeds."""
    if ti.try_number == 1:
        raise ConnectionResetError(104, "Connection reset by peer")
    return ti.try_number


with _dag("bench_native"):

    @task(retries=1, retry_delay=timedelta(seconds=1))
    def native(number: int, ti=None) -> int:
        return fail_once(ti)

    native.expand(number=list(range(TASKS)))


with _dag("bench_policy"):

    @task
    def classified(number: int, ti=None) -> int:
        return fail_once(ti)

    apply_profile(classified.expand(number=list(range(TASKS))), "report", backoff=ONE_SECOND)


with _dag("bench_poison"):

    @task
    def poison(number: int) -> None:
        """A missing table: poison, to the DLQ on its first try."""
        raise RuntimeError('relation "positions_v2" does not exist')

    apply_profile(
        poison.expand(number=list(range(int(os.environ.get("BENCH_POISON_TASKS", "1000"))))),
        "pipeline",
        backoff=ONE_SECOND,
    )
