"""DAGs for the distributed scenarios (tests/e2e/test_distributed.py): CeleryExecutor, two workers.

Tasks write small marker files under ``$E2E_PID_DIR`` naming the Celery worker that ran them
(``AIRFLOW_DEVSTACK_WORKER``, set by the dev stack), so the tests can tell the workers apart.
A task pinned to one worker uses that worker's own queue (``worker-1`` or ``worker-2``).
"""

from __future__ import annotations

import dataclasses
import os
import time
from datetime import timedelta
from pathlib import Path

from airflow.sdk import task
from scenario_parts import FAST, LOAD_KINDS, _dag, raise_load_failure  # the bundle folder is on sys.path

from airflow_retry_provider import apply_profile
from airflow_retry_provider.ledger import idempotent
from airflow_retry_provider.policy import get_profile


def mark(kind: str, name: str, content: str = "") -> Path:
    """Write ``$E2E_PID_DIR/<kind>/<name>`` holding this worker's name and ``content``."""
    folder = Path(os.environ["E2E_PID_DIR"]) / kind
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"{os.environ.get('AIRFLOW_DEVSTACK_WORKER', '?')} {content}".strip())
    return path


with _dag("dist_load"):

    @task
    def fail_on_any_worker(kind: str, ti=None) -> None:
        """Notes the worker of this try, then fails as told."""
        mark("load", f"{ti.map_index}-{ti.try_number}")
        raise_load_failure(kind)

    apply_profile(fail_on_any_worker.expand(kind=LOAD_KINDS), "pipeline", backoff=FAST)


with _dag("dist_pool"):
    # Two slots for six tasks, three pinned to each worker.
    for number in range(6):
        worker = f"worker-{number % 2 + 1}"

        @task(task_id=f"extract_{number}", pool="dist_positions_db", pool_slots=1, queue=worker)
        def extract(ti=None) -> None:
            mark("pool", ti.task_id)
            time.sleep(4)

        extract()


@idempotent(key=lambda context: f"dist-ledger/{context['run_id']}")
def load_positions_once() -> str:
    """The work unit both tasks claim: runs once, and says which worker ran it."""
    path = mark("ledger-ran", f"{time.time_ns()}-{os.getpid()}")
    time.sleep(5)
    return path.read_text().split()[0]


with _dag("dist_ledger"):
    # The same work unit, claimed from both workers at the same moment. The loser's claim finds
    # the unit busy (WorkUnitBusy) and fails; its retries come back until the winner has finished,
    # then find the unit done and return the recorded result without running it.
    for worker in ("worker-1", "worker-2"):

        @task(
            task_id=f"claim_on_{worker.replace('-', '_')}",
            queue=worker,
            retries=4,
            retry_delay=timedelta(seconds=5),
        )
        def claim(ti=None) -> str:
            mark("ledger-arrived", f"{ti.task_id}-{ti.try_number}")
            arrived = Path(os.environ["E2E_PID_DIR"]) / "ledger-arrived"
            deadline = time.monotonic() + 120
            while len(list(arrived.iterdir())) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)  # a barrier: both claims go out together
            return load_positions_once()

        claim()


with _dag("dist_worker_killed"):

    @task(queue="worker-2")
    def long_extraction_on_worker_2(ti=None) -> None:
        """Says it started (the test then SIGKILLs worker-2 with all its processes) and works on."""
        mark("killed", f"try-{ti.try_number}", str(os.getpid()))
        time.sleep(600)

    # One attempt and no infra allowance: the heartbeat-timeout failure is final, so it must become a letter.
    apply_profile(
        long_extraction_on_worker_2(),
        dataclasses.replace(
            get_profile("dashboard"), name="dashboard-once", max_attempts=1, infra_allowance=0
        ),
        backoff=FAST,
    )


with _dag("dist_worker_child_killed"):

    @task(queue="worker-1")
    def extraction_whose_celery_child_dies(ti=None) -> str:
        """Try 1: says it started with the pid of the Celery pool child supervising it (the test SIGKILLs that
        child) and works on; try 2 succeeds."""
        if ti.try_number == 1:
            mark("child-killed", f"try-{ti.try_number}", f"{os.getpid()} {os.getppid()}")
            time.sleep(600)
        return "done"

    apply_profile(extraction_whose_celery_child_dies(), "dashboard", backoff=FAST)
