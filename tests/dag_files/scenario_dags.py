"""DAGs for the end-to-end scenarios in a real Airflow (tests/e2e/test_scenarios.py).

Backoff bases are a second or two so the scenarios finish in minutes; everything else is the
production policy, callbacks and dead-letter store.
"""

from __future__ import annotations

import time
from datetime import timedelta

import pendulum
from airflow.sdk import DAG, task

from airflow_retry_provider import apply_profile
from airflow_retry_provider.policy import Backoff

FAST = Backoff(base=timedelta(seconds=2), multiplier=2, cap=timedelta(seconds=8), jitter=0.25)
START = pendulum.datetime(2026, 11, 1, tz="America/Sao_Paulo")
TAGS = ["airflow-retry-provider", "e2e"]


def _dag(dag_id: str) -> DAG:
    return DAG(dag_id=dag_id, schedule=None, start_date=START, catchup=False, tags=TAGS)


with _dag("e2e_transient"):

    @task
    def flaky(ti=None) -> int:
        """Connection resets on tries 1 and 2; success on try 3."""
        if ti.try_number < 3:
            raise ConnectionResetError(104, "Connection reset by peer")
        return ti.try_number

    apply_profile(flaky(), "report", backoff=FAST)


with _dag("e2e_exhausted"):

    @task
    def always_refused() -> None:
        """Every try: the upstream refuses the connection."""
        raise ConnectionRefusedError(111, "Connection refused")

    apply_profile(always_refused(), "report", backoff=FAST)


def _deadline_one_hour_after_interval(context):
    """Deliver within an hour of the data interval's end (the run's logical date here)."""
    end = context.get("data_interval_end") if context else None
    return end + timedelta(hours=1) if end else None


with _dag("e2e_deadline"):

    @task
    def late_report() -> None:
        """A 429 that could be retried, but a retry takes 2 h and the delivery is due in 1 h."""
        exc = RuntimeError("429 Too Many Requests")
        exc.status_code = 429  # type: ignore[attr-defined]
        raise exc

    apply_profile(
        late_report(),
        "report",
        backoff=FAST,
        deadline=_deadline_one_hour_after_interval,
        expected_duration=timedelta(hours=2),
    )


with _dag("e2e_pool_capacity"):
    # The positions database takes one heavy extraction or two light ones at a time.
    @task(pool="e2e_positions_db", pool_slots=2)
    def heavy_extraction() -> None:
        time.sleep(6)

    @task(pool="e2e_positions_db", pool_slots=1)
    def light_extraction_a() -> None:
        time.sleep(6)

    @task(pool="e2e_positions_db", pool_slots=1)
    def light_extraction_b() -> None:
        time.sleep(6)

    heavy_extraction()
    light_extraction_a()
    light_extraction_b()


with _dag("e2e_worker_killed"):

    @task
    def long_extraction(ti=None) -> None:
        """Writes its pids for the test (which SIGKILLs the worker), then works for a long time."""
        import os
        from pathlib import Path

        folder = Path(os.environ["E2E_PID_DIR"])
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"try-{ti.try_number}").write_text(f"{os.getpid()} {os.getppid()}")
        time.sleep(600)

    apply_profile(long_extraction(), "dashboard", backoff=FAST)


LOAD_KINDS = ["poison"] * 80 + ["unknown"] * 60 + ["retryable"] * 60


with _dag("e2e_load"):

    @task
    def fail(kind: str) -> None:
        """Fails as told: poison (missing table), unknown (read timeout) or retryable (503)."""
        if kind == "poison":
            raise RuntimeError('relation "positions_v2" does not exist')
        if kind == "unknown":
            raise TimeoutError("read timed out waiting for the load confirmation")
        exc = RuntimeError("503 Service Unavailable")
        exc.status_code = 503  # type: ignore[attr-defined]
        raise exc

    apply_profile(fail.expand(kind=LOAD_KINDS), "dashboard", backoff=FAST)


with _dag("e2e_bystander"):

    @task
    def still_scheduled() -> str:
        """A small DAG that must keep running while the load drains."""
        return "ok"

    still_scheduled()
