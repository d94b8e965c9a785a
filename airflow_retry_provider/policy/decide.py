"""The decision after a failed attempt: retry (when, and why) or dead letter (which kind, and why).

The first rule that applies wins:

1. poison -> dead letter with the classification's category, at once (no attempts burned);
2. unknown outcome and the task cannot reconcile with the remote side -> ``unknown-outcome``
   (never resubmit blindly);
3. attempts exhausted (``attempt >= max_attempts``) -> ``exhausted``;
4. a deadline is given and ``not_before + expected_duration + validation > deadline``
   -> ``deadline-infeasible`` (more retries would only prolong the incident);
5. otherwise retry after ``backoff.delay(attempt, seed)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from airflow_retry_provider.policy.backoff import Backoff
from airflow_retry_provider.policy.classify import Classification, FailureClass

MAX_REASON_CHARS = 500
"""Airflow stores at most 500 characters of ``retry_reason``; every reason fits."""

DEAD_LETTER_UNKNOWN_OUTCOME = "unknown-outcome"
DEAD_LETTER_EXHAUSTED = "exhausted"
DEAD_LETTER_DEADLINE_INFEASIBLE = "deadline-infeasible"


@dataclass(frozen=True)
class Retry:
    """Run again, not before ``not_before``.

    :param attempt: the number of the next attempt (the failed one + 1).
    :param delay: how long to wait, whole milliseconds.
    :param not_before: ``now + delay`` (timezone-aware).
    :param reason: one line, at most MAX_REASON_CHARS, e.g.
        ``[attempt 2/3] [after 2026-11-30T10:05:00Z] retryable/rate-limited: HTTPError: 429 ...``.
    """

    attempt: int
    delay: timedelta
    not_before: datetime
    reason: str


@dataclass(frozen=True)
class DeadLetter:
    """Stop retrying and send the work unit to the dead-letter queue.

    :param category: the classification's category for poison, else ``unknown-outcome``,
        ``exhausted`` or ``deadline-infeasible``.
    :param reason: one line, at most MAX_REASON_CHARS, e.g.
        ``[attempt 1/3] dead letter poison/not-found: NoSuchTable: table x not found``.
    :param failure_class: the classification's failure class.
    """

    category: str
    reason: str
    failure_class: FailureClass


def _check_attempts(attempt: object, max_attempts: object) -> None:
    for name, value in (("attempt", attempt), ("max_attempts", max_attempts)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


def _check_aware(name: str, value: object) -> None:
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be a timezone-aware datetime, got {value!r}")


def _check_duration(name: str, value: object) -> None:
    if not isinstance(value, timedelta) or value < timedelta(0):
        raise ValueError(f"{name} must be a timedelta >= 0, got {value!r}")


def format_timestamp(value: datetime) -> str:
    """``2026-11-30T10:05:00Z``: UTC, whole seconds (truncated)."""
    return value.astimezone(timezone.utc).isoformat(timespec="seconds")[:-6] + "Z"  # "+00:00" -> "Z"


def format_duration(value: timedelta) -> str:
    """Compact: ``1h5m``, ``4m43.153s``, ``0s``."""
    total_ms = (value.days * 86_400 + value.seconds) * 1000 + value.microseconds // 1000
    hours, rest_ms = divmod(total_ms, 3_600_000)
    minutes, rest_ms = divmod(rest_ms, 60_000)
    seconds, milliseconds = divmod(rest_ms, 1000)
    parts = []
    if hours:
        parts.append(f"{hours}h")
    if minutes:
        parts.append(f"{minutes}m")
    if milliseconds:
        parts.append(f"{seconds}.{milliseconds:03d}s")
    elif seconds or not parts:
        parts.append(f"{seconds}s")
    return "".join(parts)


def _cap(reason: str) -> str:
    reason = " ".join(reason.split())  # one line: runs of whitespace become one space
    if len(reason) > MAX_REASON_CHARS:
        return reason[: MAX_REASON_CHARS - 1] + "…"
    return reason


def describe(classification: Classification) -> str:
    """``retryable/rate-limited: HTTPError: 429 Too Many Requests`` (the message is already redacted)."""
    head = f"{classification.failure_class}/{classification.category}: {classification.exception_type}"
    return f"{head}: {classification.message}" if classification.message else head


def decide(
    classification: Classification,
    *,
    attempt: int,
    max_attempts: int,
    now: datetime,
    backoff: Backoff,
    seed: str,
    deadline: datetime | None = None,
    expected_duration: timedelta = timedelta(0),
    validation: timedelta = timedelta(0),
    can_reconcile: bool = False,
) -> Retry | DeadLetter:
    """Decide what follows failed ``attempt`` (1-based) out of ``max_attempts`` (see the module docstring)."""
    _check_attempts(attempt, max_attempts)
    _check_aware("now", now)
    if deadline is not None:
        _check_aware("deadline", deadline)
    _check_duration("expected_duration", expected_duration)
    _check_duration("validation", validation)
    if not isinstance(backoff, Backoff):
        raise ValueError(f"backoff must be a Backoff, got {backoff!r}")

    failure_class = classification.failure_class
    prefix = f"[attempt {attempt}/{max_attempts}] dead letter"
    what = describe(classification)

    if failure_class == "poison":
        reason = f"{prefix} {what}"
        return DeadLetter(classification.category, _cap(reason), failure_class)
    if failure_class == "unknown" and not can_reconcile:
        reason = f"{prefix} {DEAD_LETTER_UNKNOWN_OUTCOME}: {what}"
        return DeadLetter(DEAD_LETTER_UNKNOWN_OUTCOME, _cap(reason), failure_class)
    if attempt >= max_attempts:
        reason = f"{prefix} {DEAD_LETTER_EXHAUSTED} after {attempt} attempts: {what}"
        return DeadLetter(DEAD_LETTER_EXHAUSTED, _cap(reason), failure_class)

    delay = backoff.delay(attempt, seed)
    not_before = now + delay
    if deadline is not None:
        needed = expected_duration + validation
        if not_before + needed > deadline:
            reason = (
                f"{prefix} {DEAD_LETTER_DEADLINE_INFEASIBLE}: next attempt at {format_timestamp(not_before)}"
                f" + {format_duration(needed)} would finish after deadline {format_timestamp(deadline)}: {what}"
            )
            return DeadLetter(DEAD_LETTER_DEADLINE_INFEASIBLE, _cap(reason), failure_class)

    reason = f"[attempt {attempt + 1}/{max_attempts}] [after {format_timestamp(not_before)}] {what}"
    return Retry(attempt + 1, delay, not_before, _cap(reason))
