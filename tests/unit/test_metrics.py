"""Metric names and counts handed to Airflow's Stats (the StatsD wire is tested end to end)."""

from __future__ import annotations

from airflow.sdk.observability.stats import Stats

from airflow_retry_provider import metrics


def test_names_are_safe_segments_and_counts_pass_through(monkeypatch):
    sent: list[tuple[str, int]] = []
    monkeypatch.setattr(Stats, "incr", lambda name, count=1, *args, **kwargs: sent.append((name, count)))
    metrics.incr("reconciliation", "finding", "Bronze", "not-processed", count=3)
    metrics.decision("retryable", "rate-limited", "retry")
    metrics.incr("letter", "")
    assert sent == [
        ("retry_provider.reconciliation.finding.bronze.not_processed", 3),
        ("retry_provider.decision.retryable.rate_limited", 1),
        ("retry_provider.action.retry", 1),
        ("retry_provider.letter.none", 1),
    ]


def test_a_failing_metrics_backend_never_breaks_the_caller(monkeypatch):
    def broken(*args, **kwargs):
        raise ConnectionError("statsd is down")

    monkeypatch.setattr(Stats, "incr", broken)
    metrics.incr("letter", "created")  # no exception
