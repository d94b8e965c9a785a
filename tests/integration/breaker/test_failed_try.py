"""A try that fails while its dependency's breaker is open: kept on Airflow 3.4 (``RetryDecision.reschedule``), spent on 3.3."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

import pytest
from airflow.sdk import DAG, task

from airflow_retry_provider.airflow_compat import retry_policy_reschedules
from airflow_retry_provider.breaker.guard import guard
from airflow_retry_provider.breaker.store import BreakerStore
from airflow_retry_provider.policy.breaker import WAKE_SLACK_SECONDS, BreakerSettings
from airflow_retry_provider.retry_policy import ClassifiedRetryPolicy

SLOW = BreakerSettings(cooldown_seconds=600, max_cooldown_seconds=1800, max_hold_seconds=3000)


def context_of(task_id: str) -> dict:
    """A guarded task's context as the worker passes it to the retry policy."""
    with DAG(dag_id="d", schedule=None):

        @task(task_id=task_id, retries=3)
        def read() -> None: ...

        operator = read().operator
    guard(operator, "positions_db", SLOW)
    ti = SimpleNamespace(dag_id="d", run_id="r", task_id=task_id, map_index=-1, try_number=1)
    return {"task": operator, "ti": ti}


def open_breaker(store: BreakerStore) -> None:
    for n in range(SLOW.min_failures):
        store.record_failure("positions_db", f"o/r/t{n}/-1", SLOW, unwell=True, reason="server-error")


def test_an_unwell_failure_while_open_is_rescheduled_to_the_next_probe_on_3_4(provider_conn):
    """3.4: reschedule until the next probe (plus the slack), bounded by max_hold, counted as a hold; 3.3: a retry."""
    store = BreakerStore.from_dsn(provider_conn)
    open_breaker(store)
    store.admit("positions_db", "d/r/first/-1", SLOW)  # held longest: it leads
    decision = ClassifiedRetryPolicy(max_attempts=4).evaluate(
        ConnectionError("connection refused"), 1, 4, context_of("read")
    )
    if not retry_policy_reschedules():
        assert decision.action.value == "retry"
        return
    assert decision.action.value == "reschedule"
    assert decision.reschedule_timeout == timedelta(seconds=SLOW.max_hold_seconds)
    expected = timedelta(seconds=SLOW.cooldown_seconds + WAKE_SLACK_SECONDS)
    assert expected - timedelta(seconds=10) < decision.retry_delay <= expected
    assert "positions_db" in decision.reason and "no try spent" in decision.reason
    assert store.statuses()[0].held == 2


@pytest.mark.parametrize(
    "failure",
    [
        ValueError("column 'qty' not found"),  # poison: never held, its letter is filed
        RuntimeError("something odd"),  # not the dependency's: the policy decides as usual
    ],
)
def test_other_failures_are_not_held(provider_conn, failure):
    """Only an unwell failure waits for the breaker; any other is decided by the retry policy."""
    store = BreakerStore.from_dsn(provider_conn)
    open_breaker(store)
    decision = ClassifiedRetryPolicy(max_attempts=4).evaluate(failure, 1, 4, context_of("read"))
    assert decision.action.value != "reschedule"
    assert store.statuses()[0].held == 0


def test_a_closed_breaker_holds_nothing(provider_conn):
    """Closed (this failure may be the one that opens it): the try is spent, on both versions."""
    decision = ClassifiedRetryPolicy(max_attempts=4).evaluate(
        ConnectionError("connection refused"), 1, 4, context_of("read")
    )
    assert decision.action.value == "retry"
