"""Each task instance is seeded with its own work-unit key, and every decision reaches Airflow's metrics."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any
from zoneinfo import ZoneInfo

from airflow.sdk._shared.observability.metrics import stats as airflow_stats

from airflow_retry_provider import ClassifiedRetryPolicy
from airflow_retry_provider.identity import work_unit_key
from airflow_retry_provider.policy import PROFILES

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=timezone.utc)
SAO_PAULO_DST_END = datetime(2019, 2, 16, 23, 30, tzinfo=ZoneInfo("America/Sao_Paulo"))  # 23:xx twice


def _context(start: datetime | None, end: datetime | None, map_index: int = -1) -> dict[str, Any]:
    ti = SimpleNamespace(dag_id="sales", run_id="r", task_id="load", map_index=map_index, try_number=1)
    return {
        "ti": ti,
        "task": SimpleNamespace(retries=2),
        "data_interval_start": start,
        "data_interval_end": end,
    }


def test_one_policy_seeds_each_task_instance_with_its_own_key():
    """Seeds are per task instance and interval, even for datetimes that compare equal."""
    policy = ClassifiedRetryPolicy("report", clock=lambda: NOW)
    first, second = SAO_PAULO_DST_END, SAO_PAULO_DST_END.replace(fold=1)
    assert first == second and first.utcoffset() != second.utcoffset()  # the repeated hour
    contexts = [
        _context(first, first + timedelta(hours=1)),
        _context(second, second + timedelta(hours=1)),
        _context(first, first + timedelta(hours=1), map_index=3),
        _context(None, None),
        _context(first, first + timedelta(hours=1)),  # seen before: the same key again
    ]
    backoff = PROFILES["report"].backoff
    for context in contexts:
        decision = policy.evaluate(ConnectionResetError(104, "reset"), 1, 2, context)
        assert decision.retry_delay == backoff.delay(1, work_unit_key(context))
    assert work_unit_key(contexts[0]) != work_unit_key(contexts[1])


class _Recorder:
    """A metrics backend that keeps what it is sent (Airflow's StatsLogger protocol, incr only)."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def incr(self, stat: str, count: int = 1, rate: float = 1, *, tags: Any = None) -> None:
        self.sent.append(stat)


def test_every_decision_is_counted_by_class_category_and_action(monkeypatch):
    """A metrics backend receives a decision counter and an action counter for every decision."""
    recorder = _Recorder()
    monkeypatch.setattr(airflow_stats, "_backend", recorder)
    policy = ClassifiedRetryPolicy("report", clock=lambda: NOW)
    policy.evaluate(ConnectionResetError(104, "reset"), 1, 2, _context(None, None))
    policy.evaluate(KeyError("customer_id"), 1, 2, _context(None, None))
    assert recorder.sent == [
        "retry_provider.decision.retryable.connection_failed",
        "retry_provider.action.retry",
        "retry_provider.decision.poison.code_error",
        "retry_provider.action.dead_letter",
    ]
