"""What a retry reason says, read back, and the schedule still ahead of a task instance.

Airflow keeps each try's ``retry_reason`` (500 characters) and nothing else of the policy's
decision. So the policy tags its reasons with what the Retries tab needs and cannot find
elsewhere: the rule that decided, the profile and the delivery deadline. Tags follow the leading
``[attempt n/M]`` (and ``[after ...]``) of the reason, so a reason still reads as before::

    [attempt 2/3] [after 2026-11-30T10:05:00Z] [rule http-429] [profile report] retryable/rate-limited: ...

Pure: stdlib only, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from airflow_retry_provider.policy.backoff import Backoff
from airflow_retry_provider.policy.decide import MAX_REASON_CHARS, format_timestamp
from airflow_retry_provider.policy.engine import pattern
from airflow_retry_provider.policy.rules import FAILURE_CLASSES

# reasons are read back from Airflow: text like any other, so matched with RE2
_TAG = pattern(r"\[(attempt|after|rule|profile|deadline) ([^\]]+)\]")
_CLASS = pattern(r"\b(poison|retryable|unknown|infra)/([a-z0-9][a-z0-9-]*)")
_DEAD_LETTER = pattern(r"\bdead letter ([a-z][a-z0-9-]*)")


def reason_tags(rule: str, profile: str | None = None, deadline: datetime | None = None) -> str:
    """``[rule r] [profile p] [deadline t]``: what a policy adds to a reason (no profile, no deadline: left out)."""
    tags = f"[rule {rule}] [profile {profile}]" if profile else f"[rule {rule}]"
    if deadline is not None:
        tags = f"{tags} [deadline {format_timestamp(deadline)}]"
    return tags


def tag_reason(reason: str, rule: str, profile: str | None = None, deadline: datetime | None = None) -> str:
    """``reason`` with :func:`reason_tags` after its leading tags, capped as before.

    One space joins the parts (the space around the leading tags is dropped).
    """
    tagged = reason_tags(rule, profile, deadline)
    end = _leading_tags_end(reason)
    if end:
        tagged = f"{reason[:end].rstrip()} {tagged}"
    rest = reason[end:].lstrip()
    if rest:
        tagged = f"{tagged} {rest}"
    if len(tagged) > MAX_REASON_CHARS:
        tagged = tagged[: MAX_REASON_CHARS - 1] + "…"
    return tagged


def _leading_tags_end(reason: str) -> int:
    """Where the leading ``[attempt ...]`` and ``[after ...]`` tags of ``reason`` end (0: none)."""
    end = 0
    while reason.startswith(("[attempt ", "[after "), end):
        close = reason.find("]", end)
        if close < 0:
            break
        end = close + 1
        if reason[end : end + 1] == " ":
            end += 1
    return end


@dataclass(frozen=True)
class ReasonParts:
    """What one retry reason says (None where it says nothing).

    :param attempt: the attempt the reason is about: the next one for a retry, the failed one for
        a dead letter.
    :param max_attempts: the ceiling, counting the first attempt.
    :param not_before: when the retry may start (retries only).
    :param dead_letter: the dead-letter category (``exhausted``, ``unknown-outcome``, ...) when the
        decision was to stop.
    """

    attempt: int | None = None
    max_attempts: int | None = None
    not_before: datetime | None = None
    rule: str | None = None
    profile: str | None = None
    deadline: datetime | None = None
    failure_class: str | None = None
    category: str | None = None
    dead_letter: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            name: value.isoformat() if isinstance(value, datetime) else value
            for name, value in self.__dict__.items()
        }


def _timestamp(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def parse_reason(reason: str | None) -> ReasonParts:
    """Read back a reason written by the policy; a reason of anyone else gives what it can (often nothing)."""
    if not reason:
        return ReasonParts()
    tags: dict[str, str] = {}
    for tag in _TAG.finditer(reason):
        tags.setdefault(tag.group(1), tag.group(2).strip())
    attempt = max_attempts = None
    done, _, ceiling = tags.get("attempt", "").partition("/")
    if done.isdigit() and ceiling.isdigit():
        attempt, max_attempts = int(done), int(ceiling)
    body = _TAG.sub("", reason)
    found = _CLASS.search(body)
    stopped = _DEAD_LETTER.search(body)
    dead_letter = stopped.group(1) if stopped else None
    if dead_letter in FAILURE_CLASSES:  # "dead letter poison/not-found: ..."
        dead_letter = found.group(2) if found else None
    return ReasonParts(
        attempt=attempt,
        max_attempts=max_attempts,
        not_before=_timestamp(tags["after"]) if "after" in tags else None,
        rule=tags.get("rule"),
        profile=tags.get("profile"),
        deadline=_timestamp(tags["deadline"]) if "deadline" in tags else None,
        failure_class=found.group(1) if found else None,
        category=found.group(2) if found else None,
        dead_letter=dead_letter,
    )


@dataclass(frozen=True)
class PlannedTry:
    """An attempt still ahead, if every attempt before it fails at once.

    :param attempt: its number (1-based, counting the first).
    :param offset: how long after the first planned attempt starts it may start.
    :param at: when, if the first planned attempt's start is known.
    """

    attempt: int
    offset: timedelta
    at: datetime | None

    def to_json(self) -> dict[str, object]:
        return {
            "attempt": self.attempt,
            "offset_seconds": self.offset.total_seconds(),
            "at": self.at.isoformat() if self.at else None,
        }


def remaining_schedule(
    backoff: Backoff,
    seed: str,
    next_attempt: int,
    max_attempts: int,
    start: datetime | None = None,
    deadline: datetime | None = None,
) -> tuple[tuple[PlannedTry, ...], str]:
    """Attempts ``next_attempt`` .. ``max_attempts``, each after the backoff of the one before it.

    ``start`` is when ``next_attempt`` starts (None: offsets only). Stops at the ceiling, or before
    the first attempt that would start after ``deadline``. Returns the attempts and why they stop
    (``"ceiling"`` or ``"deadline"``).
    """
    rows: list[PlannedTry] = []
    offset = timedelta(0)
    for attempt in range(max(1, next_attempt), max_attempts + 1):
        if attempt > next_attempt:
            offset += backoff.delay(attempt - 1, seed)
        at = start + offset if start is not None else None
        if deadline is not None and at is not None and at > deadline:
            return tuple(rows), "deadline"
        rows.append(PlannedTry(attempt, offset, at))
    return tuple(rows), "ceiling"


def attempts_spent(*, earlier_tries: int, code_failures: int, infra_allowance: int) -> int:
    """The author's attempts a failed try has spent, itself included.

    ``earlier_tries`` are the failed tries of this generation before this one, ``code_failures``
    those among them that the task's code failed (recorded by the retry policy: poison, retryable,
    unknown). The others ended with no exception (killed, evicted, lost: infrastructure) and spend
    an attempt only beyond ``infra_allowance``. With ``infra_allowance`` 0 this is the try's place
    in its generation, Airflow's own count.
    """
    for name, value in (
        ("earlier_tries", earlier_tries),
        ("code_failures", code_failures),
        ("infra_allowance", infra_allowance),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    code = min(code_failures, earlier_tries)  # a row of a try outside the generation never counts twice
    infra = earlier_tries - code
    return code + max(0, infra - infra_allowance) + 1
