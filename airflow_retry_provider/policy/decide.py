"""The decision after a failed attempt: retry (when, and why) or dead letter (which kind, and why).

The first rule that applies wins:

1. poison -> dead letter with the classification's category, at once (no attempts burned);
2. unknown outcome and the work is not safe to repeat -> ``unknown-outcome`` (never resubmit
   blindly; work is safe to repeat when it is idempotent by construction or reconciles with the
   remote side before it resubmits);
3. attempts exhausted (``attempt >= max_attempts``) -> ``exhausted``;
4. a deadline is given and ``not_before + expected_duration + validation > deadline``
   -> ``deadline-infeasible`` (more retries would only prolong the incident);
5. otherwise retry after ``backoff.delay(attempt, seed)``; when the server sent ``Retry-After``
   (``classification.retry_after``), after ``max(backoff delay, Retry-After)`` but never more
   than ``backoff.cap``. The reason says ``Retry-After 120 s`` and, for an unknown outcome,
   ``unknown outcome, safe to repeat``.
"""

from __future__ import annotations

import functools
import math
from datetime import datetime, timedelta, timezone
from typing import NamedTuple

from airflow_retry_provider.policy.backoff import Backoff
from airflow_retry_provider.policy.classify import MAX_MESSAGE_CHARS, Classification
from airflow_retry_provider.policy.fields import show
from airflow_retry_provider.policy.redact import cut, redact
from airflow_retry_provider.policy.rules import FailureClass

MAX_REASON_CHARS = 500
"""Airflow stores at most 500 characters of ``retry_reason``; every reason fits."""

DEAD_LETTER_UNKNOWN_OUTCOME = "unknown-outcome"
DEAD_LETTER_EXHAUSTED = "exhausted"
DEAD_LETTER_DEADLINE_INFEASIBLE = "deadline-infeasible"
SAFE_TO_REPEAT_NOTE = "unknown outcome, safe to repeat"


class Retry(NamedTuple):
    """Run again, not before ``not_before`` (an immutable record).

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


class DeadLetter(NamedTuple):
    """Stop retrying and send the work unit to the dead-letter queue (an immutable record).

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


def check_aware(name: str, value: object) -> datetime:
    """``value`` if it is a timezone-aware datetime, else a ValueError naming ``name`` and the value."""
    if not isinstance(value, datetime) or value.utcoffset() is None:
        raise ValueError(f"{name} must be a timezone-aware datetime, got {value!r}")
    return value


def check_duration(name: str, value: object) -> timedelta:
    """``value`` if it is a timedelta >= 0, else a ValueError naming ``name`` and the value."""
    if not isinstance(value, timedelta) or value < timedelta(0):
        raise ValueError(f"{name} must be a timedelta >= 0, got {show(value)}")
    return value


def format_timestamp(value: datetime) -> str:
    """``2026-11-30T10:05:00Z``: UTC, whole seconds (truncated); a naive value is local time."""
    utc = value.astimezone(timezone.utc).replace(tzinfo=None)
    return f"{utc.isoformat(timespec='seconds')}Z"


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
    """One line, at most MAX_REASON_CHARS (cut as :func:`cut` does: never half a word's secret).

    The reason is made of the policy's own words and the classification, whose message is
    redacted already (:func:`decide` redacts it first).
    """
    return cut(one_line(reason), MAX_REASON_CHARS)


def one_line(text: str) -> str:
    """``text`` on one line: whitespace runs become one space, none at either end."""
    return " ".join(text.split())


def describe(classification: Classification) -> str:
    """``retryable/rate-limited: HTTPError: 429 Too Many Requests`` (the message is already redacted)."""
    head = f"{classification.failure_class}/{classification.category}: {classification.exception_type}"
    return f"{head}: {classification.message}" if classification.message else head


def letter_reason(
    what: str, *, attempt: int | None, max_attempts: int | None, category: str | None = None, detail: str = ""
) -> str:
    """A dead letter's reason, written here only (the rules below, the failure callback, the sweeper):
    ``[attempt 3/3] dead letter exhausted after 3 attempts: retryable/timeout: TimeoutError: ...``.

    :param what: the failure (:func:`describe`), or what the deciding policy said of it.
    :param attempt: the attempt that failed; None when no decision is known (the sweeper found the
        failure): ``[filed by sweeper] <what>``.
    :param max_attempts: the ceiling (None: unknown, shown ``?``).
    :param category: the dead-letter category; None when ``what`` leads with it (poison's
        ``poison/not-found: ...``).
    :param detail: what follows the category (`` after 3 attempts``, the deadline's arithmetic).
    """
    if attempt is None:
        return f"[filed by sweeper] {what}"
    head = f"[attempt {attempt}/{max_attempts or '?'}] dead letter"
    return f"{head} {category}{detail}: {what}" if category else f"{head} {what}"


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
    safe_to_repeat: bool = False,
) -> Retry | DeadLetter:
    """Decide what follows failed ``attempt`` (1-based) out of ``max_attempts`` (see the module docstring)."""
    _check_attempts(attempt, max_attempts)
    check_aware("now", now)
    if deadline is not None:
        check_aware("deadline", deadline)
    check_duration("expected_duration", expected_duration)
    check_duration("validation", validation)
    if not isinstance(backoff, Backoff):
        raise ValueError(f"backoff must be a Backoff, got {backoff!r}")
    # a classification from classify() is redacted already; one built by hand may not be
    classification = classification._replace(message=redact(classification.message, MAX_MESSAGE_CHARS))
    failure_class = classification.failure_class
    what = describe(classification)
    tried = functools.partial(letter_reason, attempt=attempt, max_attempts=max_attempts)

    # 1. poison: at once
    if failure_class == "poison":
        return _dead_letter(classification.category, tried(what), failure_class)
    # 2. an unknown outcome is never resubmitted blindly
    if failure_class == "unknown" and not safe_to_repeat:
        category = DEAD_LETTER_UNKNOWN_OUTCOME
        return _dead_letter(category, tried(what, category=category), failure_class)
    # 3. attempts exhausted
    if attempt >= max_attempts:
        category = DEAD_LETTER_EXHAUSTED
        reason = tried(what, category=category, detail=f" after {attempt} attempts")
        return _dead_letter(category, reason, failure_class)
    delay, note = retry_delay(classification, backoff, attempt, seed)
    not_before = now + delay
    # 4. a retry that cannot finish before the deadline is not attempted (validation included)
    needed = expected_duration + validation
    if deadline is not None and not_before + needed > deadline:
        category = DEAD_LETTER_DEADLINE_INFEASIBLE
        waited = f" ({note})" if note else ""
        detail = (
            f": next attempt at {format_timestamp(not_before)}{waited} "
            f"+ {format_duration(needed)} would finish after deadline {format_timestamp(deadline)}"
        )
        return _dead_letter(category, tried(what, category=category, detail=detail), failure_class)
    # 5. retry after the backoff's delay (or the server's Retry-After, within the cap)
    why = f"{note}: {what}" if note else what
    reason = f"[attempt {attempt + 1}/{max_attempts}] [after {format_timestamp(not_before)}] {why}"
    return Retry(attempt=attempt + 1, delay=delay, not_before=not_before, reason=_cap(reason))


def _dead_letter(category: str, reason: str, failure_class: FailureClass) -> DeadLetter:
    return DeadLetter(category=category, reason=_cap(reason), failure_class=failure_class)


def retry_delay(
    classification: Classification, backoff: Backoff, attempt: int, seed: str
) -> tuple[timedelta, str]:
    """Rule 5's wait after failed ``attempt``, and what the reason says about it ("" when nothing)."""
    delay = backoff.delay(attempt, seed)
    notes = [SAFE_TO_REPEAT_NOTE] if classification.failure_class == "unknown" else []
    asked = classification.retry_after
    if asked is not None:
        seconds = math.ceil(asked.total_seconds())
        capped = f" (capped at {format_duration(backoff.cap)})" if asked > backoff.cap else ""
        notes.append(f"Retry-After {seconds} s{capped}")
        delay = min(backoff.cap, max(delay, asked))
    return delay, "; ".join(notes)
