"""The classified retry policy inside Airflow's own task runner, with ``dag.test()``."""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest

from airflow_retry_provider.identity import make_work_unit_key
from airflow_retry_provider.policy import PROFILES
from tests.conftest import task_tries
from tests.dag_files import policy_dags

pytestmark = pytest.mark.dags


def _letters(dsn: str) -> dict[str, dict]:
    with psycopg.connect(dsn) as conn:
        cur = conn.execute("SELECT * FROM retry_dead_letters")
        names = [c.name for c in cur.description]
        return {row[names.index("task_id")]: dict(zip(names, row, strict=True)) for row in cur.fetchall()}


def _states(run) -> dict[str, tuple[str, int]]:
    return {ti.task_id: (ti.state, ti.try_number) for ti in run.get_task_instances()}


def test_poison_runs_once_and_is_dead_lettered_between_two_valid_jobs(airflow_db, provider_conn):
    """A poison failure runs exactly once, fails with our reason, and lands in the DLQ; its neighbours succeed."""
    run = policy_dags.poison_dag.test()
    states = _states(run)
    assert states["valid_before"] == ("success", 1)
    assert states["valid_after"] == ("success", 1)
    assert states["invalid_job"] == ("failed", 1)
    letters = _letters(provider_conn)
    assert set(letters) == {"invalid_job"}
    letter = letters["invalid_job"]
    assert (letter["failure_class"], letter["category"], letter["status"]) == ("poison", "not-found", "dlq")
    assert letter["attempts_used"] == 1 and letter["max_attempts"] == 3 and letter["try_number"] == 1
    assert letter["reason"].startswith("[attempt 1/3] dead letter poison/not-found: RuntimeError:")
    assert letter["work_unit_key"] == make_work_unit_key(
        "policy_poison_between_valid",
        "invalid_job",
        -1,
        run.data_interval_start,
        run.data_interval_end,
        run.run_id,
    )


def test_transient_failure_retries_with_exactly_our_delays(airflow_db, provider_conn):
    """A connection reset is retried; Airflow stores our exact delays and reasons; success files no letter."""
    run = policy_dags.transient_dag.test()
    assert _states(run)["flaky"] == ("success", 3)
    key = make_work_unit_key(
        "policy_transient_recovers", "flaky", -1, run.data_interval_start, run.data_interval_end, run.run_id
    )
    tries = task_tries("policy_transient_recovers", run.run_id, "flaky")
    assert [t[0] for t in tries] == [1, 2, 3]
    for attempt, (_, _state, delay_override, reason) in zip((1, 2), tries[:2], strict=True):
        expected = policy_dags.FAST.delay(attempt, key)
        assert timedelta(seconds=delay_override) == expected
        assert reason.startswith(f"[attempt {attempt + 1}/3] [after ")
        assert "retryable/connection-failed: ConnectionResetError:" in reason
    assert _letters(provider_conn) == {}


def test_each_profile_ceiling_holds(airflow_db, provider_conn):
    """A task that always fails runs exactly its profile's max_attempts times and is filed as exhausted."""
    run = policy_dags.ceilings_dag.test()
    states, letters = _states(run), _letters(provider_conn)
    for profile in ("dashboard", "report", "pipeline"):
        max_attempts = PROFILES[profile].max_attempts
        task_id = f"always_503_{profile}"
        assert states[task_id] == ("failed", max_attempts), profile
        letter = letters[task_id]
        assert (letter["failure_class"], letter["category"]) == ("retryable", "exhausted"), profile
        assert letter["attempts_used"] == max_attempts == letter["max_attempts"], profile


def test_poison_input_skips_the_attempts_and_safe_timeouts_are_retried(airflow_db, provider_conn):
    """Bad input goes to the DLQ on its first try; a timeout is retried only in work safe to repeat."""
    run = policy_dags.classified_dag.test()
    states, letters = _states(run), _letters(provider_conn)
    dag_id = "policy_poison_input_and_safe_timeouts"

    assert states["bad_payload"] == ("failed", 1)  # one try of two: no attempt burned, no backoff waited
    letter = letters["bad_payload"]
    assert (letter["failure_class"], letter["category"], letter["attempts_used"]) == (
        "poison",
        "invalid-input",
        1,
    )
    assert letter["reason"].startswith("[attempt 1/2] dead letter poison/invalid-input: JSONDecodeError:")

    for task_id in ("slow_report", "slow_idempotent_write"):  # report profile; @idempotent under pipeline
        assert states[task_id] == ("success", 2), task_id
        key = make_work_unit_key(
            dag_id, task_id, -1, run.data_interval_start, run.data_interval_end, run.run_id
        )
        (_, _, delay_override, reason), _ = task_tries(dag_id, run.run_id, task_id)
        assert timedelta(seconds=delay_override) == policy_dags.FAST.delay(1, key), task_id
        assert "] unknown outcome, safe to repeat: unknown/task-timeout: AirflowTaskTimeout" in reason, (
            task_id
        )
        assert task_id not in letters

    assert states["slow_pipeline_write"] == ("failed", 1)  # a plain write: never resubmitted blindly
    letter = letters["slow_pipeline_write"]
    assert (letter["failure_class"], letter["category"]) == ("unknown", "unknown-outcome")
