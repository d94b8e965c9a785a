"""A failure callback waits out a crowded PostgreSQL only while Airflow lets its task process live."""

from __future__ import annotations

import pytest

from airflow_retry_provider.dlq.callback import CROWDED_SECONDS, crowded_budget


@pytest.mark.parametrize(
    ("overtime", "budget"),
    [
        (None, 10.0),  # Airflow's default task_success_overtime, 20 s: half of it
        ("30", 15.0),  # a longer overtime: still half, the rest for the filing's announcement
        ("600", CROWDED_SECONDS),  # a very long one: never more than CROWDED_SECONDS
        ("0", 0.0),  # no overtime at all: one try, then the sweeper
    ],
)
def test_the_wait_is_half_of_airflows_task_success_overtime_at_most(monkeypatch, overtime, budget):
    """The budget is min(CROWDED_SECONDS, [core] task_success_overtime / 2)."""
    if overtime is None:
        monkeypatch.delenv("AIRFLOW__CORE__TASK_SUCCESS_OVERTIME", raising=False)
    else:
        monkeypatch.setenv("AIRFLOW__CORE__TASK_SUCCESS_OVERTIME", overtime)
    assert crowded_budget() == budget
