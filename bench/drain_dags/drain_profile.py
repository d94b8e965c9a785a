"""bench/drain.py, variant 4: ``apply_profile`` (policy, execution timeout, dead-letter callbacks), a constant 1 s backoff."""

from __future__ import annotations

import os
from datetime import timedelta

import pendulum
from airflow.sdk import DAG, task

from airflow_retry_provider import apply_profile
from airflow_retry_provider.policy import Backoff

ONE_SECOND = Backoff(base=timedelta(seconds=1), multiplier=1, cap=timedelta(seconds=1), jitter=0)

with DAG(
    dag_id="drain_profile",
    schedule=None,
    start_date=pendulum.datetime(2026, 11, 1, tz="America/Sao_Paulo"),
    catchup=False,
    tags=["bench"],
):

    @task
    def work(number: int, ti=None) -> int:
        if ti.try_number == 1:
            raise ConnectionResetError(104, "Connection reset by peer")
        return number

    apply_profile(
        work.expand(number=list(range(int(os.environ.get("BENCH_TASKS", "200"))))),
        "dashboard",
        backoff=ONE_SECOND,
    )
