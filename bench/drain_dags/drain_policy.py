"""bench/drain.py, variant 3: the provider's retry policy only (no profile, no callbacks), a constant 1 s backoff."""

from __future__ import annotations

import os
from datetime import timedelta

import pendulum
from airflow.sdk import DAG, task

from airflow_retry_provider import ClassifiedRetryPolicy
from airflow_retry_provider.policy import Backoff

ONE_SECOND = Backoff(base=timedelta(seconds=1), multiplier=1, cap=timedelta(seconds=1), jitter=0)

with DAG(
    dag_id="drain_policy",
    schedule=None,
    start_date=pendulum.datetime(2026, 11, 1, tz="America/Sao_Paulo"),
    catchup=False,
    tags=["bench"],
):
    # no infra allowance: retries=1, the same tries as plain Airflow's
    @task(retries=1, retry_policy=ClassifiedRetryPolicy("dashboard", backoff=ONE_SECOND, infra_allowance=0))
    def work(number: int, ti=None) -> int:
        if ti.try_number == 1:
            raise ConnectionResetError(104, "Connection reset by peer")
        return number

    work.expand(number=list(range(int(os.environ.get("BENCH_TASKS", "200")))))
