"""The decision after a failed attempt: rule order, exact reasons, deadlines and validation."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pendulum
import pytest

from airflow_retry_provider.policy import (
    MAX_REASON_CHARS,
    Backoff,
    Classification,
    DeadLetter,
    Retry,
    decide,
    format_duration,
    format_timestamp,
)
from airflow_retry_provider.policy.decide import letter_reason

NOW = datetime(2026, 11, 30, 10, 0, 0, tzinfo=timezone.utc)
# jitter 0 keeps the arithmetic readable: the delay after attempt n is 5 min * 2 ** (n - 1)
BACKOFF = Backoff(base=timedelta(minutes=5), multiplier=2, cap=timedelta(hours=1), jitter=0)

RATE_LIMITED = Classification(
    "retryable", "rate-limited", "http-rate-limited", "HTTPError", "429 Too Many Requests"
)
NOT_FOUND = Classification("poison", "not-found", "message-not-found", "NoSuchTable", "table x not found")
TIMEOUT = Classification("unknown", "timeout", "type-timeout", "TimeoutError", "timed out")


def run(classification: Classification, **overrides: Any) -> Retry | DeadLetter:
    arguments: dict[str, Any] = {
        "attempt": 1,
        "max_attempts": 3,
        "now": NOW,
        "backoff": BACKOFF,
        "seed": "unit",
    }
    return decide(classification, **{**arguments, **overrides})


def test_retry() -> None:
    """A retryable failure with attempts left is retried after the backoff, with our reason."""
    assert run(RATE_LIMITED) == Retry(
        attempt=2,
        delay=timedelta(minutes=5),
        not_before=datetime(2026, 11, 30, 10, 5, tzinfo=timezone.utc),
        reason="[attempt 2/3] [after 2026-11-30T10:05:00Z] retryable/rate-limited: HTTPError: 429 Too Many Requests",
    )


def test_retry_uses_jittered_delay() -> None:
    """The delay is exactly backoff.delay(attempt, seed)."""
    backoff = Backoff()
    result = run(RATE_LIMITED, attempt=2, backoff=backoff, seed="job")
    assert isinstance(result, Retry)
    assert result.delay == backoff.delay(2, "job") == timedelta(milliseconds=558_459)
    assert result.not_before == NOW + result.delay
    assert result.reason.startswith("[attempt 3/3] [after 2026-11-30T10:09:18Z] ")


def test_poison_dead_letters_at_once() -> None:
    """Poison goes to the dead-letter queue on the first attempt, with its own category."""
    assert run(NOT_FOUND) == DeadLetter(
        category="not-found",
        reason="[attempt 1/3] dead letter poison/not-found: NoSuchTable: table x not found",
        failure_class="poison",
    )


def test_poison_beats_exhausted() -> None:
    """On the last attempt, poison still reports its category, not 'exhausted'."""
    assert run(NOT_FOUND, attempt=3).category == "not-found"  # type: ignore[union-attr]


def test_unknown_outcome_without_reconcile() -> None:
    """An unknown outcome is never resubmitted blindly."""
    assert run(TIMEOUT) == DeadLetter(
        category="unknown-outcome",
        reason="[attempt 1/3] dead letter unknown-outcome: unknown/timeout: TimeoutError: timed out",
        failure_class="unknown",
    )


def test_unknown_outcome_beats_exhausted() -> None:
    """On the last attempt an unknown outcome is still 'unknown-outcome': it needs reconciling."""
    assert run(TIMEOUT, attempt=3).category == "unknown-outcome"  # type: ignore[union-attr]


def test_unknown_outcome_safe_to_repeat_is_retried() -> None:
    """Work safe to repeat retries an unknown outcome, and the reason says why."""
    result = run(TIMEOUT, safe_to_repeat=True)
    assert isinstance(result, Retry)
    assert result.reason == (
        "[attempt 2/3] [after 2026-11-30T10:05:00Z] unknown outcome, safe to repeat: "
        "unknown/timeout: TimeoutError: timed out"
    )


def test_exhausted() -> None:
    """The last allowed attempt failing is 'exhausted'."""
    assert run(RATE_LIMITED, attempt=3) == DeadLetter(
        category="exhausted",
        reason=(
            "[attempt 3/3] dead letter exhausted after 3 attempts: "
            "retryable/rate-limited: HTTPError: 429 Too Many Requests"
        ),
        failure_class="retryable",
    )


def test_attempt_beyond_ceiling_is_exhausted() -> None:
    """An attempt number past max_attempts (retries lowered meanwhile) is exhausted, not an error."""
    assert run(RATE_LIMITED, attempt=5).category == "exhausted"  # type: ignore[union-attr]


def test_single_attempt_profile() -> None:
    """max_attempts=1: the first failure is final."""
    assert run(RATE_LIMITED, max_attempts=1).category == "exhausted"  # type: ignore[union-attr]


def test_deadline_infeasible() -> None:
    """A retry that could not finish before the deadline is not started."""
    result = run(
        RATE_LIMITED,
        deadline=datetime(2026, 11, 30, 11, 0, tzinfo=timezone.utc),
        expected_duration=timedelta(minutes=50),
        validation=timedelta(minutes=5, seconds=1),
    )
    assert result == DeadLetter(
        category="deadline-infeasible",
        reason=(
            "[attempt 1/3] dead letter deadline-infeasible: next attempt at 2026-11-30T10:05:00Z + 55m1s "
            "would finish after deadline 2026-11-30T11:00:00Z: "
            "retryable/rate-limited: HTTPError: 429 Too Many Requests"
        ),
        failure_class="retryable",
    )


def test_finishing_exactly_at_deadline_is_feasible() -> None:
    """not_before + expected_duration + validation == deadline still retries."""
    result = run(
        RATE_LIMITED,
        deadline=datetime(2026, 11, 30, 11, 0, tzinfo=timezone.utc),
        expected_duration=timedelta(minutes=50),
        validation=timedelta(minutes=5),
    )
    assert isinstance(result, Retry)


def test_exhausted_beats_deadline() -> None:
    """Rule order: attempts exhausted is reported before an infeasible deadline."""
    result = run(RATE_LIMITED, attempt=3, deadline=NOW)
    assert result.category == "exhausted"  # type: ignore[union-attr]


def test_deadline_in_another_timezone() -> None:
    """Deadlines are compared as instants; the reason prints them in UTC."""
    sao_paulo = timezone(timedelta(hours=-3))
    deadline = datetime(2026, 11, 30, 7, 4, 59, tzinfo=sao_paulo)  # 10:04:59Z
    result = run(RATE_LIMITED, deadline=deadline)
    assert isinstance(result, DeadLetter)
    assert "after deadline 2026-11-30T10:04:59Z" in result.reason


def test_reason_is_capped_and_one_line() -> None:
    """A long, multi-line message gives a one-line reason of at most MAX_REASON_CHARS."""
    noisy = Classification("retryable", "server-error", "http-server-error", "HTTPError", "line\n" * 400)
    for result in (run(noisy), run(noisy, attempt=3)):
        assert MAX_REASON_CHARS - 10 < len(result.reason) <= MAX_REASON_CHARS  # the cut word is dropped
        assert "\n" not in result.reason
        assert result.reason.endswith("…")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"now": datetime(2026, 11, 30, 10, 0)}, "now must be a timezone-aware datetime"),  # naive clock
        ({"deadline": datetime(2026, 11, 30, 11, 0)}, "deadline must be a timezone-aware"),  # naive deadline
        ({"attempt": 0}, "attempt must be an integer >= 1"),  # attempts are 1-based
        ({"attempt": True}, "attempt must be an integer >= 1"),  # a bool is not an attempt
        ({"max_attempts": 0}, "max_attempts must be an integer >= 1"),  # no execution allowed
        ({"expected_duration": timedelta(seconds=-1)}, "expected_duration must be a timedelta >= 0"),
        ({"validation": 60}, "validation must be a timedelta >= 0"),  # seconds instead of a timedelta
        ({"backoff": None}, "backoff must be a Backoff"),  # missing backoff
    ],
)
def test_validation(overrides: dict[str, Any], message: str) -> None:
    """Bad arguments are refused with a message naming the argument."""
    with pytest.raises(ValueError, match=message):
        run(RATE_LIMITED, **overrides)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (timedelta(0), "0s"),  # nothing
        (timedelta(hours=1), "1h"),  # whole hours
        (timedelta(minutes=55, seconds=1), "55m1s"),  # minutes and seconds
        (timedelta(seconds=283, milliseconds=153), "4m43.153s"),  # milliseconds kept
        (timedelta(days=1, minutes=5), "24h5m"),  # days as hours
    ],
)
def test_format_duration(value: timedelta, text: str) -> None:
    """Durations in reasons are compact."""
    assert format_duration(value) == text


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (datetime(2026, 11, 30, 10, 5, 0, 999_999, tzinfo=timezone.utc), "2026-11-30T10:05:00Z"),
        (pendulum.datetime(2026, 11, 30, 7, 5, tz="America/Sao_Paulo"), "2026-11-30T10:05:00Z"),
        # 23:00 EST, five hours before New York's clocks go forward (07:00Z): moving the local
        # time by its offset would cross the change and print 05:00Z
        (pendulum.datetime(2026, 3, 7, 23, 0, tz="America/New_York"), "2026-03-08T04:00:00Z"),
    ],
    ids=["utc", "zone", "zone-before-dst-change"],
)
def test_timestamps_are_utc_whole_seconds(moment: datetime, expected: str) -> None:
    """Reasons and work-unit keys write instants as UTC, whatever zone they came in."""
    assert format_timestamp(moment) == expected


@pytest.mark.parametrize(
    ("retry_after", "delay", "note"),
    [
        (timedelta(seconds=120), timedelta(minutes=5), "Retry-After 120 s"),  # backoff is longer: backoff
        (timedelta(seconds=600), timedelta(minutes=10), "Retry-After 600 s"),  # the server asks more: wait it
        (timedelta(0), timedelta(minutes=5), "Retry-After 0 s"),  # a date already past
        (timedelta(hours=3), timedelta(hours=1), "Retry-After 10800 s (capped at 1h)"),  # never above the cap
    ],
)
def test_retry_after_waits_the_longer_of_backoff_and_server(
    retry_after: timedelta, delay: timedelta, note: str
) -> None:
    """A Retry-After waits max(backoff, Retry-After), at most the cap, and the reason says so."""
    result = run(RATE_LIMITED._replace(retry_after=retry_after))
    assert isinstance(result, Retry)
    assert result.delay == delay
    assert result.reason == (
        f"[attempt 2/3] [after {format_timestamp(NOW + delay)}] {note}: "
        "retryable/rate-limited: HTTPError: 429 Too Many Requests"
    )


def test_retry_after_past_the_deadline_is_infeasible() -> None:
    """A Retry-After that would start the retry after the deadline dead-letters as deadline-infeasible."""
    limited = RATE_LIMITED._replace(retry_after=timedelta(minutes=20))
    result = run(limited, deadline=NOW + timedelta(minutes=15))
    assert isinstance(result, DeadLetter)
    assert result.category == "deadline-infeasible"
    assert (
        "next attempt at 2026-11-30T10:20:00Z (Retry-After 1200 s) + 0s would finish after" in result.reason
    )
    assert isinstance(
        run(limited, deadline=NOW + timedelta(minutes=20)), Retry
    )  # exactly at the deadline: fine


def test_reason_is_redacted() -> None:
    """A secret in a classification's message, however it was built, never reaches the retry reason."""
    leaky = Classification(
        "retryable", "server-error", "rule", "HTTPError", "502 from https://u:p@ss/w@h/ Cookie: sid=abc"
    )
    for result in (run(leaky), run(leaky, attempt=3)):
        assert "p@ss" not in result.reason and "sid=abc" not in result.reason
        assert "https://u:***@h/" in result.reason


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        # poison: the classification leads the text, so no category of its own
        ({"attempt": 1, "max_attempts": 3}, "[attempt 1/3] dead letter poison/not-found: E: gone"),
        # exhausted, as rule 3 writes it
        (
            {"attempt": 3, "max_attempts": 3, "category": "exhausted", "detail": " after 3 attempts"},
            "[attempt 3/3] dead letter exhausted after 3 attempts: poison/not-found: E: gone",
        ),
        # the failure callback when Airflow's ceiling is unknown
        (
            {"attempt": 2, "max_attempts": None, "category": "other-policy"},
            "[attempt 2/?] dead letter other-policy: poison/not-found: E: gone",
        ),
        # the sweeper knows no decision
        ({"attempt": None, "max_attempts": None}, "[filed by sweeper] poison/not-found: E: gone"),
    ],
)
def test_letter_reason_is_one_form(kwargs, expected) -> None:
    """Every filer's reason comes from letter_reason: the attempt, the category and its detail, then what failed."""
    assert letter_reason("poison/not-found: E: gone", **kwargs) == expected
