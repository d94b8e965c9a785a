"""DAGs for the end-to-end scenarios in a real Airflow (tests/e2e/test_scenarios.py).

Backoff bases are a second or two so the scenarios finish in minutes; everything else is the
production policy, callbacks and dead-letter store.
"""

from __future__ import annotations

import time
from datetime import timedelta

from airflow.sdk import task
from scenario_parts import FAST, LOAD_KINDS, _dag, raise_load_failure  # the bundle folder is on sys.path

from airflow_retry_provider import apply_profile
from airflow_retry_provider.policy import Backoff

__all__ = ["FAST", "LOAD_KINDS"]  # the e2e tests compute expected delays and kinds from them


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

    # no infra allowance: the two kills spend both attempts, and the exhausted try must become a letter
    apply_profile(long_extraction(), "dashboard", backoff=FAST, infra_allowance=0)


with _dag("e2e_load"):

    @task
    def fail(kind: str) -> None:
        """Fails as told (see raise_load_failure)."""
        raise_load_failure(kind)

    apply_profile(fail.expand(kind=LOAD_KINDS), "pipeline", backoff=FAST)  # a plain write: not safe to repeat


with _dag("e2e_bystander"):

    @task
    def still_scheduled() -> str:
        """A small DAG that must keep running while the load drains."""
        return "ok"

    still_scheduled()


# the backoff stays under a second, so the server's Retry-After (2 s) decides the wait
BRIEF = Backoff(base=timedelta(milliseconds=500), multiplier=2, cap=timedelta(seconds=10), jitter=0.25)

with _dag("e2e_retry_after"):

    @task
    def rate_limited_export(ti=None) -> int:
        """Try 1: the API answers 429 with Retry-After: 2 (a real requests HTTPError); try 2 succeeds."""
        import requests

        if ti.try_number == 1:
            response = requests.Response()
            response.status_code = 429
            response.reason = "Too Many Requests"
            response.url = "https://api.example.com/v1/export"
            response.headers["Retry-After"] = "2"
            response.raise_for_status()
        return ti.try_number

    apply_profile(rate_limited_export(), "report", backoff=BRIEF)
