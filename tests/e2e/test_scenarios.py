"""The product in a real Airflow: classified retries, dead letters, deadlines, pools and metrics.

200 mapped failures at once, each decided and filed once while other DAGs keep running, are in
test_distributed.py (the same DAG shape, on two Celery workers).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from datetime import datetime, timedelta

import pytest

from airflow_retry_provider.identity import make_work_unit_key
from tests.dag_files.scenario_parts import FAST
from tests.e2e.conftest import sample_until

pytestmark = pytest.mark.e2e

SCENARIOS = ("e2e_transient", "e2e_exhausted", "e2e_deadline")


@pytest.fixture(scope="module")
def runs(e2e):
    """All scenario runs, triggered at once so they proceed side by side."""
    return {dag_id: e2e.trigger(dag_id) for dag_id in SCENARIOS}


def _key(run, task_id):
    interval = [datetime.fromisoformat(run[k]) for k in ("data_interval_start", "data_interval_end")]
    return make_work_unit_key(run["dag_id"], task_id, -1, *interval, run["dag_run_id"])


def test_transient_failure_recovers_on_attempt_3_with_our_exact_delays(e2e, runs):
    """Tries 1 and 2 are retried after exactly the delays the policy computed; the scheduler honours them."""
    run = e2e.wait(runs["e2e_transient"])
    assert run["state"] == "success"
    tries = e2e.tries(run, "flaky")
    assert [t["try_number"] for t in tries] == [1, 2, 3]
    assert tries[-1]["state"] == "success"
    key = _key(run, "flaky")
    for attempt, (failed, following) in enumerate(zip(tries, tries[1:], strict=False), start=1):
        expected = FAST.delay(attempt, key)
        assert timedelta(seconds=failed["retry_delay_override"]) == expected  # to the millisecond
        assert failed["retry_reason"].startswith(f"[attempt {attempt + 1}/3] [after ")
        assert "retryable/connection-failed: ConnectionResetError" in failed["retry_reason"]
        assert following["start_date"] >= failed["end_date"] + expected
    assert e2e.letters("e2e_transient") == {}


def test_exhausted_after_exactly_max_attempts(e2e, runs):
    """A failure that never recovers runs max_attempts times and becomes an 'exhausted' letter."""
    run = e2e.wait(runs["e2e_exhausted"])
    assert run["state"] == "failed"
    assert [t["try_number"] for t in e2e.tries(run, "always_refused")] == [1, 2, 3]
    letter = e2e.letters("e2e_exhausted")["always_refused"]
    assert (letter["category"], letter["failure_class"], letter["status"]) == (
        "exhausted",
        "retryable",
        "dlq",
    )
    assert letter["attempts_used"] == 3 == letter["try_number"]
    assert letter["work_unit_key"] == _key(run, "always_refused")


def test_retry_that_cannot_meet_the_deadline_is_not_attempted(e2e, runs):
    """A retryable 429 whose retry would finish after the deadline runs once and says deadline-infeasible."""
    run = e2e.wait(runs["e2e_deadline"])
    assert run["state"] == "failed"
    assert [t["try_number"] for t in e2e.tries(run, "late_report")] == [1]
    letter = e2e.letters("e2e_deadline")["late_report"]
    assert (letter["category"], letter["failure_class"]) == ("deadline-infeasible", "retryable")
    assert "would finish after deadline" in letter["reason"]


def test_pool_never_runs_more_than_its_slots(e2e):
    """A 2-slot pool with one heavy (2) and two light (1) tasks: never more than 2 slots in use."""
    e2e.stack.api(
        "POST",
        "/api/v2/pools",
        json={
            "name": "e2e_positions_db",
            "slots": 2,
            "description": "positions database",
            "include_deferred": False,
        },
    )
    run = e2e.trigger("e2e_pool_capacity")
    samples: list[int] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            pool = e2e.stack.api("GET", "/api/v2/pools/e2e_positions_db")
            samples.append(
                int(pool["running_slots"]) + int(pool["queued_slots"]) + int(pool["deferred_slots"])
            )
            time.sleep(0.3)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        finished = e2e.wait(run)
    finally:
        done.set()
        sampler.join(timeout=10)
    assert finished["state"] == "success"
    assert max(samples) == 2, samples  # used to the full, never beyond
    assert all(0 <= s <= 2 for s in samples)


def test_metrics_reach_statsd(e2e, runs):
    """Decisions and letters are counted through Airflow's own StatsD metrics."""
    for dag_id in SCENARIOS:
        e2e.wait(runs[dag_id])
    counters = {}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        counters = e2e.statsd.counters("airflow.retry_provider.")
        if counters.get("airflow.retry_provider.letter.created", 0) >= 2:
            break
        time.sleep(1)
    assert counters.get("airflow.retry_provider.decision.retryable.connection_failed", 0) >= 2 + 2
    assert counters.get("airflow.retry_provider.action.retry", 0) >= 4
    assert counters.get("airflow.retry_provider.decision.retryable.deadline_infeasible", 0) >= 1
    assert counters.get("airflow.retry_provider.action.dead_letter", 0) >= 2
    assert counters.get("airflow.retry_provider.letter.created", 0) >= 2
    assert counters.get("airflow.retry_provider.letter.created.exhausted", 0) >= 1


def test_worker_killed_mid_task_is_never_lost(e2e):
    """SIGKILL of the worker: heartbeat timeout, Airflow's retry, and when exhausted a letter all the same."""
    run = e2e.trigger("e2e_worker_killed")
    for try_number in (1, 2):
        pid_file = e2e.pid_dir / f"try-{try_number}"
        sample_until(pid_file.exists, timeout=240)
        task_pid, supervisor_pid = (int(p) for p in pid_file.read_text().split())
        for pid in (task_pid, supervisor_pid):  # the task and the worker process supervising it
            os.kill(pid, signal.SIGKILL)
    finished = e2e.wait(run, timeout=600)
    assert finished["state"] == "failed"
    assert [t["try_number"] for t in e2e.tries(run, "long_extraction")] == [1, 2]
    sample_until(lambda: "long_extraction" in e2e.letters("e2e_worker_killed"), timeout=240)
    # issue 57: the scheduler's events tell the infra watcher what ended the try: the executor's state
    # mismatch (its worker process died, so it reported failed while the try ran), else the heartbeat timeout
    sample_until(
        lambda: e2e.letters("e2e_worker_killed")["long_extraction"]["failure_class"] == "infra", timeout=60
    )
    letter = e2e.letters("e2e_worker_killed")["long_extraction"]
    assert letter["failure_class"] == "infra" and letter["category"] in ("worker-lost", "heartbeat-timeout")
    assert letter["try_number"] == 2
