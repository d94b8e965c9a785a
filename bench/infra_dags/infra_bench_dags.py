"""bench/infra.py's DAGs: ``BENCH_TASKS`` mapped tasks SIGKILLed on their first two tries (a node drain) and then
successful, under the provider's ``dashboard`` profile (2 attempts) and under Airflow's own ``retries=1``; and one
task killed on every try, for the time from its last kill to its letter."""

from __future__ import annotations

import os
from datetime import timedelta

import pendulum
from airflow.sdk import DAG, task

from airflow_retry_provider import apply_profile
from airflow_retry_provider.policy import Backoff

TASKS = int(os.environ.get("BENCH_TASKS", "20"))
FAST = Backoff(base=timedelta(seconds=2), multiplier=2, cap=timedelta(seconds=8), jitter=0.25)
TAGS = ["airflow-retry-provider", "bench"]  # managed: the infra watcher reads them


def kill_until(ti, kills: int) -> None:
    """SIGKILL this try's own process on tries 1..``kills``, writing the kill's time first; later tries succeed."""
    import signal
    import time
    from pathlib import Path

    folder = Path(os.environ["BENCH_PID_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{ti.dag_id}-{ti.map_index}-{ti.try_number}").write_text(str(time.time()))
    if kills < 0 or ti.try_number <= kills:
        os.kill(os.getpid(), signal.SIGKILL)


def _dag(dag_id: str) -> DAG:
    return DAG(
        dag_id=dag_id,
        schedule=None,
        start_date=pendulum.datetime(2026, 11, 1, tz="UTC"),
        catchup=False,
        tags=TAGS,
    )


with _dag("infra_bench_provider"):

    @task
    def drained(partition: int, ti=None) -> None:
        kill_until(ti, 2)

    apply_profile(drained.expand(partition=list(range(TASKS))), "dashboard", backoff=FAST)


with _dag("infra_bench_native"):

    @task(retries=1, retry_delay=timedelta(seconds=2))
    def drained_native(partition: int, ti=None) -> None:
        kill_until(ti, 2)

    drained_native.expand(partition=list(range(TASKS)))


with _dag("infra_bench_every_try"):

    @task
    def killed_every_try(ti=None) -> None:
        kill_until(ti, -1)

    apply_profile(killed_every_try(), "dashboard", backoff=FAST)
