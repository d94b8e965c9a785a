"""Retry reasons read back, and the schedule still ahead (policy/tries.py)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from airflow_retry_provider.policy.backoff import Backoff
from airflow_retry_provider.policy.decide import MAX_REASON_CHARS
from airflow_retry_provider.policy.tries import parse_reason, remaining_schedule, tag_reason

AT = datetime(2026, 11, 30, 10, 5, tzinfo=timezone.utc)
DEADLINE = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
FLAT = Backoff(base=timedelta(minutes=5), multiplier=2, cap=timedelta(minutes=15), jitter=0)


def test_tags_follow_the_leading_attempt_and_after():
    """Rule, profile and deadline go after [attempt] and [after], before the classification."""
    tagged = tag_reason(
        "[attempt 2/3] [after 2026-11-30T10:05:00Z] retryable/rate-limited: HTTPError: 429",
        "http-429",
        "report",
        DEADLINE,
    )
    assert tagged == (
        "[attempt 2/3] [after 2026-11-30T10:05:00Z] [rule http-429] [profile report] "
        "[deadline 2026-12-01T12:00:00Z] retryable/rate-limited: HTTPError: 429"
    )


def test_a_tagged_reason_still_fits_airflow():
    """A tagged reason is capped at Airflow's 500 characters."""
    tagged = tag_reason("[attempt 1/3] dead letter poison/x: E: " + "m" * 600, "r", "p")
    assert len(tagged) == MAX_REASON_CHARS and tagged.endswith("…")


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        # a retry: the next attempt, when, and everything tagged
        (
            "[attempt 2/3] [after 2026-11-30T10:05:00Z] [rule http-429] [profile report] "
            "[deadline 2026-12-01T12:00:00Z] Retry-After 120 s: retryable/rate-limited: HTTPError: 429 a/b",
            dict(
                attempt=2,
                max_attempts=3,
                not_before=AT,
                rule="http-429",
                profile="report",
                deadline=DEADLINE,
                failure_class="retryable",
                category="rate-limited",
                dead_letter=None,
            ),
        ),
        # exhausted: the dead-letter category, and the class of the last failure
        (
            "[attempt 3/3] [rule conn-reset] dead letter exhausted after 3 attempts: "
            "retryable/connection-failed: ConnectionResetError: reset",
            dict(
                attempt=3,
                max_attempts=3,
                rule="conn-reset",
                failure_class="retryable",
                category="connection-failed",
                dead_letter="exhausted",
            ),
        ),
        # poison: its category is the dead-letter category
        (
            "[attempt 1/3] [rule message-not-found] dead letter poison/not-found: RuntimeError: x",
            dict(
                attempt=1,
                max_attempts=3,
                rule="message-not-found",
                failure_class="poison",
                category="not-found",
                dead_letter="not-found",
            ),
        ),
        # a reason written before the tags existed still gives class and category
        (
            "[attempt 2/3] [after 2026-11-30T10:05:00Z] retryable/timeout: TimeoutError: slow",
            dict(attempt=2, max_attempts=3, not_before=AT, failure_class="retryable", category="timeout"),
        ),
        # not ours (another policy, or none): nothing
        ("flaky upstream", {}),
        (None, {}),
    ],
)
def test_parse_reason(reason, expected):
    """Every part the policy wrote is read back; what is absent is None."""
    parts = parse_reason(reason).to_json()
    for name, value in parts.items():
        want = expected.get(name)
        assert value == (want.isoformat() if isinstance(want, datetime) else want), name


def test_schedule_runs_to_the_ceiling():
    """Attempts 2..5 at the cumulative backoff from the next start, capped per delay."""
    rows, stop = remaining_schedule(FLAT, "seed", 2, 5, AT)
    assert [(r.attempt, r.offset) for r in rows] == [
        (2, timedelta(0)),
        (3, timedelta(minutes=10)),
        (4, timedelta(minutes=25)),
        (5, timedelta(minutes=40)),
    ]
    assert rows[2].at == AT + timedelta(minutes=25)
    assert stop == "ceiling"


def test_schedule_stops_at_the_deadline():
    """No attempt is planned after the deadline."""
    rows, stop = remaining_schedule(FLAT, "seed", 2, 5, AT, AT + timedelta(minutes=20))
    assert [r.attempt for r in rows] == [2, 3]
    assert stop == "deadline"


def test_schedule_uses_the_jittered_delays():
    """The offsets are the policy's own jittered delays for the seed."""
    backoff = Backoff()
    rows, _ = remaining_schedule(backoff, "k", 1, 3)
    assert rows[2].offset == backoff.delay(1, "k") + backoff.delay(2, "k")
    assert rows[1].at is None
