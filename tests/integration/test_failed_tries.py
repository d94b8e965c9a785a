"""The retry policy's two budgets on a real PostgreSQL: it records each failed try in retry_failed_tries and
counts only the code's own failures, plus the tries that ended with no exception beyond the allowance."""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from types import SimpleNamespace

import psycopg
import pytest

from airflow_retry_provider import ClassifiedRetryPolicy
from airflow_retry_provider.policy import Retry

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=timezone.utc)


def context(try_number: int, retries: int, run_id: str = "scheduled__2026-11-29") -> dict:
    """The context a worker hands the policy for ``try_number`` of sales.load."""
    ti = SimpleNamespace(
        dag_id="sales",
        run_id=run_id,
        task_id="load",
        map_index=-1,
        try_number=try_number,
        hostname="worker-7",
    )
    return {
        "ti": ti,
        "task": SimpleNamespace(retries=retries),
        "data_interval_start": datetime(2026, 11, 28, 10, tzinfo=timezone.utc),
        "data_interval_end": datetime(2026, 11, 29, 10, tzinfo=timezone.utc),
    }


def assess(
    policy: ClassifiedRetryPolicy, error: BaseException, try_number: int, max_tries: int | None = None
):
    """What the policy decides for ``try_number`` (its task sized by the policy, first generation by default)."""
    retries = policy.retries_needed()
    return policy.assess(error, try_number, max_tries or retries, context(try_number, retries))


def rows(dsn: str) -> list[tuple]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT try_number, failure_class, category, hostname FROM retry_failed_tries ORDER BY try_number"
        ).fetchall()


def record_infra(dsn: str, try_number: int, category: str = "killed") -> None:
    """A row as the api-server's watcher writes it for a try that ended with no exception."""
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "INSERT INTO retry_failed_tries (dag_id, run_id, task_id, map_index, try_number, failure_class, category)"
            " VALUES ('sales', 'scheduled__2026-11-29', 'load', -1, %s, 'infra', %s)",
            (try_number, category),
        )


def pipeline() -> ClassifiedRetryPolicy:
    return ClassifiedRetryPolicy("pipeline", clock=lambda: NOW)


def test_a_try_after_two_kills_is_the_authors_first_attempt(provider_conn):
    """Killed twice (no rows), then the code fails: attempt 1 of 2, retried, and the try is recorded with its class."""
    evaluation = assess(pipeline(), ConnectionResetError("reset"), 3)
    assert (evaluation.attempt, evaluation.max_attempts) == (1, 2)
    assert isinstance(evaluation.decision, Retry)
    assert rows(provider_conn) == [(3, "retryable", "connection-failed", "worker-7")]


def test_the_codes_own_failures_still_get_exactly_max_attempts(provider_conn):
    """A retryable error every time: try 2 is attempt 2 of 2 and exhausted (not 4 tries)."""
    policy = pipeline()
    first = assess(policy, ConnectionResetError("reset"), 1)
    second = assess(policy, ConnectionResetError("reset"), 2)
    assert (first.attempt, second.attempt) == (1, 2)
    assert isinstance(first.decision, Retry) and second.decision.category == "exhausted"
    assert [row[:2] for row in rows(provider_conn)] == [(1, "retryable"), (2, "retryable")]


def test_kills_beyond_the_allowance_spend_attempts(provider_conn):
    """Three kills under an allowance of 2 (one recorded by the watcher, two not at all): the fourth try is attempt 2."""
    record_infra(provider_conn, 2, "oom-killed")
    evaluation = assess(pipeline(), ConnectionResetError("reset"), 4)
    assert evaluation.attempt == 2 and evaluation.decision.category == "exhausted"


def test_a_code_failure_between_kills_counts_once(provider_conn):
    """Try 1 failed in the code, try 2 was killed: try 3 is attempt 2 of report's 3, and its backoff is attempt 2's."""
    policy = ClassifiedRetryPolicy("report", clock=lambda: NOW)
    assess(policy, ConnectionResetError("reset"), 1)
    record_infra(provider_conn, 2)
    evaluation = assess(policy, ConnectionResetError("reset"), 3)
    assert evaluation.attempt == 2 and isinstance(evaluation.decision, Retry)
    other = ClassifiedRetryPolicy("report", clock=lambda: NOW)  # the same task's code failing twice, no kill
    other.assess(ConnectionResetError("reset"), 1, 4, context(1, 4, run_id="other"))
    same_without_kill = other.assess(ConnectionResetError("reset"), 2, 4, context(2, 4, run_id="other"))
    assert same_without_kill.attempt == 2
    assert evaluation.decision.reason.startswith("[attempt 3/3]")


def test_the_kill_switch_counts_every_try(provider_conn, monkeypatch):
    """With infra_allowance_enabled off, two kills spend two attempts: try 3 is attempt 3, exhausted."""
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__INFRA_ALLOWANCE_ENABLED", "false")
    policy = pipeline()
    assert policy.retries_needed() == 1
    evaluation = policy.assess(ConnectionResetError("reset"), 3, 3, context(3, 3))
    assert evaluation.attempt == 3 and evaluation.decision.category == "exhausted"


def test_rows_of_an_earlier_generation_are_not_counted(provider_conn):
    """After a clear (max_tries = try_number + retries) the code failures before it do not count."""
    policy = pipeline()
    assess(policy, ConnectionResetError("reset"), 1)
    assess(policy, ConnectionResetError("reset"), 2)
    retries = policy.retries_needed()  # cleared after try 2: tries 3 to 6 are the new generation
    evaluation = policy.assess(ConnectionResetError("reset"), 3, 2 + retries, context(3, retries))
    assert evaluation.attempt == 1 and isinstance(evaluation.decision, Retry)


def test_an_unreachable_database_counts_by_try_number(monkeypatch, caplog):
    """No provider database: every earlier try counts (never more runs), and the log says why without the password."""
    monkeypatch.setenv("AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT", "postgresql://u:s3cret-pw@127.0.0.1:9/none")
    with caplog.at_level(logging.WARNING, logger="airflow_retry_provider.retry_policy"):
        evaluation = assess(pipeline(), ConnectionResetError("reset"), 3)
    assert evaluation.attempt == 3 and evaluation.decision.category == "exhausted"
    assert "could not record the failed try" in caplog.text and "s3cret-pw" not in caplog.text


@pytest.mark.parametrize("poison", [ValueError("column 'qty' not found")])
def test_poison_after_kills_is_recorded_and_dead_lettered(provider_conn, poison):
    """Poison after two kills still goes to the queue at once; its row says poison."""
    evaluation = assess(pipeline(), poison, 3)
    assert not isinstance(evaluation.decision, Retry)
    assert rows(provider_conn)[0][1] == "poison"
