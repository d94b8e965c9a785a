"""DAGs whose tasks raise text PostgreSQL refuses (NUL, lone surrogates): run with ``dag.test()``."""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import DAG, task

from airflow_retry_provider import apply_profile
from airflow_retry_provider.policy import Backoff

FAST = Backoff(base=timedelta(seconds=1), multiplier=2, cap=timedelta(seconds=2), jitter=0.0)
START = pendulum.datetime(2026, 11, 1, tz="UTC")

with DAG(
    dag_id="hostile_nul_message",
    schedule=None,
    start_date=START,
    catchup=False,
    tags=["test"],
) as nul_dag:

    @task
    def flaky_then_poison(ti=None) -> None:
        if ti.try_number == 1:  # retried: the reason Airflow stores holds the message
            raise ConnectionResetError(104, "Connection reset by\x00peer \ud800")
        raise ValueError('relation "positions\x00v2" not found: bad\x00input \udcff')

    apply_profile(flaky_then_poison(), "report", backoff=FAST)
