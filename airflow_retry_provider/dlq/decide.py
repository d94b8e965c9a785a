"""The decisions of the replay loop, pure: frozen inputs in, an action out, no I/O.

As ``policy/decide.py`` is for a failure, this is for the dead-letter queue: each function states
one rule of ``dlq/states.py``'s tables. The loops around them (``dlq/sync.py``, ``dlq/driver.py``,
``dlq/sweeper.py``) read through the store (``dlq/store/``) and Airflow, call one of these, and apply
what it returns through the store. Nothing here imports Airflow, psycopg, or the rest of the package
(import-linter holds it), so every rule is tested without a database (``tests/unit/dlq/test_decide.py``).

- :func:`claim_refusal`: may this letter be claimed for a replay?
- :func:`status_after_failure`: a letter's status when its task instance fails again.
- :func:`replaying_step`: what a task instance's state means for the replay of a ``replaying`` letter.
- :func:`canary_verdict`: may the rest of a job follow its canary, must the job stop, or wait?
- :func:`failures_in_a_row` and :func:`stop_rule`: the job's stop rule; :func:`step_rate`: its rising pace.
- :func:`sweep_step` and :func:`resolves_at_rest`: what a sweep does with a task instance it finds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Any, Protocol

from airflow_retry_provider.states import ItemOutcome, LetterStatus, ReplayOutcome

#: the states a cleared task instance can end in without succeeding
ENDED_WITHOUT_SUCCESS = ("failed", "upstream_failed", "skipped", "removed")

STOP_AFTER_FAILURES = 3
"""Failed replays of a job in a row that stop it (the stop rule)."""


# -- may this letter be claimed --------------------------------------------------------------


def claim_refusal(status: str, replay_count: int, replay_cap: int) -> str | None:
    """Why a letter cannot be claimed for a replay, or None when it can (``dlq`` and under ``replay_cap``)."""
    if status != LetterStatus.DLQ:
        return f"status is {status}, not dlq"
    if replay_count >= replay_cap:
        return f"replay cap reached ({replay_count})"
    return None


# -- a letter's task instance failed again ---------------------------------------------------


def status_after_failure(status: str, replay_count: int, replay_cap: int) -> tuple[str, int]:
    """The letter's (status, replay_count) when its task instance fails again.

    A failed replay goes back to ``dlq`` with one more replay counted, or to ``parked`` at the
    cap; a resolved or dismissed letter that fails again (a manual clear, a newer try) reopens as
    open work, never hidden; ``dlq`` and ``parked`` keep their status.
    """
    if status == LetterStatus.REPLAYING:
        count = replay_count + 1
        return (LetterStatus.PARKED.value if count >= replay_cap else LetterStatus.DLQ.value), count
    if status in (LetterStatus.RESOLVED, LetterStatus.DISMISSED):
        return LetterStatus.DLQ.value, replay_count
    return status, replay_count


# -- what a task instance's state means for a replay -----------------------------------------


class Step(Enum):
    """What the sync does with one ``replaying`` letter."""

    RESOLVE = "resolve"
    """Airflow says success: the letter is resolved."""
    WAIT = "wait"
    """Undecided yet (its own callback's turn, or the task instance still running): looked at again later."""
    REFILE = "refile"
    """A newer failed try: the letter is filed again at that try."""
    RELEASE_UNCLAIMED = "release-unclaimed"
    """Replaying with no open claim: nothing else would decide it, so it rests again (``dlq``)."""
    ABANDON = "abandon"
    """The clear never happened and the claim's lease expired or its answer was lost: back to ``dlq``."""
    END_REPLAY = "end-replay"
    """The clear happened and the task instance ended without succeeding, or timed out: a failed replay."""
    MARK_UNKNOWN = "mark-unknown"
    """The lease expired while Airflow shows the clear happened: the replay's outcome is unknown; wait."""


class TaskInstanceSeen(Protocol):
    """A task instance as Airflow reports it (``hooks.airflow_api.TaskInstanceRef`` is one)."""

    @property
    def state(self) -> str | None: ...

    @property
    def try_number(self) -> int: ...

    @property
    def end_date(self) -> datetime | None: ...

    @property
    def note(self) -> str | None: ...


@dataclass(frozen=True)
class OpenClaim:
    """A ``replaying`` letter's open claim (its replay still ``pending`` or ``unknown``).

    :param replay_id: the replay.
    :param try_number_before: the try the claim was made at.
    :param outcome: ``pending`` or ``unknown`` (the clear's answer was lost).
    :param cleared_at: when Airflow confirmed the clear (None: not confirmed).
    :param requested_at: when the claim was made.
    :param lease_expired: the claim's lease has expired.
    """

    replay_id: int
    try_number_before: int
    outcome: str
    cleared_at: datetime | None
    requested_at: datetime | None
    lease_expired: bool

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> OpenClaim | None:
        """The claim of a row of ``dlq:replaying_letters`` or ``dlq:open_claims``; None when it has none."""
        if row.get("replay_id") is None:
            return None
        return cls(
            int(row["replay_id"]),
            int(row["try_number_before"]),
            row["replay_outcome"],
            row.get("cleared_at"),
            row.get("replay_requested_at"),
            bool(row.get("lease_expired")),
        )


@dataclass(frozen=True)
class ReplayingLetter:
    """One ``replaying`` letter, its open claim and its task instance as Airflow reports it.

    :param letter_try_number: the try the letter was filed at.
    :param ti: its task instance in Airflow.
    :param claim: its open claim (None: it has none).
    :param now: the time of the decision.
    :param grace: how long a just-ended try is left to its own callback.
    :param replay_timeout: how long a cleared replay may take to end.
    """

    letter_try_number: int
    ti: TaskInstanceSeen
    claim: OpenClaim | None
    now: datetime
    grace: timedelta
    replay_timeout: timedelta


@dataclass(frozen=True)
class SyncAction:
    """What to do with a ``replaying`` letter, and the words its history records (``detail``)."""

    step: Step
    detail: str = ""
    lost: bool = False
    """``ABANDON``: the clear's answer was lost (else the lease expired before any clear)."""


def cleared_by(note: str | None, replay_id: int) -> bool:
    """Whether a task instance's note is the one this replay's clear left (``replay_note``): then it was cleared."""
    return note is not None and note.startswith(f"airflow-retry replay #{replay_id} ")


def replaying_step(seen: ReplayingLetter) -> SyncAction:
    """What the task instance's state means for the replay of a ``replaying`` letter, in this order.

    1. success resolves;
    2. a try that ended less than ``grace`` ago is left to its own callback;
    3. a newer failed try files the letter again;
    4. with no open claim the letter rests again;
    5. a clear that did not happen (Airflow still shows the claimed failed try, no note of this
       replay, not confirmed) is abandoned once its answer was lost or its lease expired, else awaited;
    6. a clear that happened whose task instance ended without succeeding, or that waited past
       ``replay_timeout``, is a failed replay;
    7. otherwise it waits, its claim marked ``unknown`` when the lease expired before any confirmation.
    """
    ti, claim = seen.ti, seen.claim
    if ti.state == "success":
        return SyncAction(Step.RESOLVE)
    if ti.end_date is not None and seen.now - ti.end_date < seen.grace:
        return SyncAction(Step.WAIT)
    if ti.state == "failed" and ti.try_number > seen.letter_try_number:
        return SyncAction(Step.REFILE)
    if claim is None:
        return SyncAction(Step.RELEASE_UNCLAIMED)
    still_claimed_try = ti.state == "failed" and ti.try_number == claim.try_number_before
    happened = (
        claim.cleared_at is not None
        or not still_claimed_try
        # e.g. marked failed by hand after a clear whose answer was lost
        or cleared_by(ti.note, claim.replay_id)
    )
    lost = claim.outcome == ReplayOutcome.UNKNOWN
    if not happened:
        if lost or claim.lease_expired:
            detail = (
                f"the clear's answer was lost and Airflow shows try {claim.try_number_before} still failed: "
                "the clear never happened; back to dlq"
                if lost
                else "the claim's lease expired before any clear: back to dlq"
            )
            return SyncAction(Step.ABANDON, detail, lost=lost)
        return SyncAction(Step.WAIT)
    since = claim.cleared_at or claim.requested_at
    timed_out = since is not None and seen.now - since >= seen.replay_timeout
    if ti.state in ENDED_WITHOUT_SUCCESS:
        return SyncAction(
            Step.END_REPLAY,
            f"the replayed task instance ended {ti.state} at try {ti.try_number} without succeeding",
        )
    if timed_out:
        return SyncAction(
            Step.END_REPLAY,
            f"the replayed task instance is still {ti.state} at try {ti.try_number} "
            f"{int(seen.replay_timeout.total_seconds())} s after the clear: the replay timed out",
        )
    if claim.cleared_at is None and claim.outcome == ReplayOutcome.PENDING and claim.lease_expired:
        return SyncAction(
            Step.MARK_UNKNOWN,
            f"lease expired; Airflow shows the clear happened (state {ti.state}, try {ti.try_number})",
        )
    return SyncAction(Step.WAIT)


# -- the canary ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CanaryState:
    """The canary item of a job as the driver reads it while it waits."""

    letter_id: int
    outcome: str
    replay_id: int | None
    detail: str | None
    replay_outcome: str | None
    replay_detail: str | None
    letter_status: str | None
    letter_reason: str | None
    overdue: bool


class Canary(Enum):
    """The canary's verdict."""

    PASSED = "passed"
    """Its replay succeeded: the rest of the job follows at the rising pace."""
    FAILED = "failed"
    """Its clear or its replay failed: the job stops, the other letters untouched."""
    UNDECIDED = "undecided"
    """No outcome within ``replay_canary_timeout_seconds``: the job stops."""
    WAIT = "wait"
    """Not decided yet: ask Airflow again after a while."""


@dataclass(frozen=True)
class CanaryVerdict:
    """The canary's verdict and, when the job stops, why (``reason``, the job's ``stop_reason``)."""

    verdict: Canary
    reason: str = ""


def canary_verdict(canary: CanaryState, timeout_seconds: int) -> CanaryVerdict:
    """Success passes; a refused or failed clear, or a failed or abandoned replay, fails; past its deadline it is undecided."""
    letter = f"canary letter {canary.letter_id}"
    if canary.replay_outcome == ReplayOutcome.SUCCEEDED:
        return CanaryVerdict(Canary.PASSED)
    if canary.outcome in (ItemOutcome.CLEAR_FAILED, ItemOutcome.REFUSED) or canary.replay_outcome in (
        ReplayOutcome.FAILED,
        ReplayOutcome.CLEAR_FAILED,
        ReplayOutcome.ABANDONED,
    ):
        why = canary.letter_reason if canary.replay_outcome == ReplayOutcome.FAILED else None
        why = why or canary.replay_detail or canary.detail or canary.outcome
        back = f"; it is {canary.letter_status}" if canary.letter_status else ""
        return CanaryVerdict(Canary.FAILED, f"{letter} failed: {why}{back}")
    if canary.overdue:
        return CanaryVerdict(
            Canary.UNDECIDED,
            f"canary undecided: the outcome of {letter} was not known within "
            f"{timeout_seconds} s (replay_canary_timeout_seconds)",
        )
    return CanaryVerdict(Canary.WAIT)


# -- the stop rule ---------------------------------------------------------------------------


def failures_in_a_row(outcomes: Sequence[str]) -> int:
    """How many of a job's decided replay outcomes, newest first, failed before the newest success."""
    run = 0
    for outcome in outcomes:
        if outcome == ReplayOutcome.SUCCEEDED:
            break
        run += 1
    return run


def stop_rule(failures: int, limit: int = STOP_AFTER_FAILURES) -> str | None:
    """Why the job stops here (``limit`` of its replays failed in a row), or None when it goes on."""
    if failures < limit:
        return None
    return f"stop rule: {failures} replays of this job failed in a row"


# -- what a sweep does with a task instance it finds -----------------------------------------


class SweepStep(Enum):
    """What a sweep does with a task instance it read from Airflow."""

    RESOLVE_AT_REST = "resolve-at-rest"
    """It succeeded: its letters at rest (``dlq``, ``parked``) are resolved."""
    LEAVE = "leave"
    """Not the sweep's: a DAG it does not manage, or a failure its own callback may still file."""
    FILE = "file"
    """A failure to file, unless a letter already covers its try."""


@dataclass(frozen=True)
class FoundInstance:
    """A task instance a sweep found.

    :param state: its state in Airflow (``failed`` or ``success``).
    :param end_date: when it ended.
    :param managed: its DAG is one the sweep files letters for.
    """

    state: str
    end_date: datetime | None
    managed: bool


def sweep_step(found: FoundInstance, now: datetime, grace: timedelta) -> SweepStep:
    """Success resolves letters at rest; a failure of a managed DAG that ended at least ``grace`` ago is filed."""
    if found.state == "success":
        return SweepStep.RESOLVE_AT_REST
    if not found.managed or (found.end_date is not None and now - found.end_date < grace):
        return SweepStep.LEAVE
    return SweepStep.FILE


def resolves_at_rest(status: str) -> bool:
    """Whether a letter with ``status`` is resolved when a sweep finds its task instance succeeded."""
    return status in (LetterStatus.DLQ, LetterStatus.PARKED)


PACE_STEPS: tuple[tuple[int, int], ...] = ((1, 1), (5, 5))
"""After the canary succeeds the rest follow at a rising pace: each ``(clears, clears per minute)``
step in turn (one letter at 1/min, then five at 5/min), then the configured pace, never above it. A
failed replay of the job starts the steps again from the first; ``STOP_AFTER_FAILURES`` failed
replays in a row stop the job."""


def step_rate(step_clears: int, configured: int, steps: Sequence[tuple[int, int]] = PACE_STEPS) -> int:
    """The clears per minute for the next clear, ``step_clears`` clears into the rising pace (at most ``configured``)."""
    passed = 0
    for clears, rate in steps:
        passed += clears
        if step_clears < passed:
            return min(rate, configured)
    return configured


def pace_steps_json(steps: Sequence[tuple[int, int]] = PACE_STEPS) -> list[dict[str, Any]]:
    """The steps as the progress page and the JSON API show them."""
    return [{"clears": clears, "per_minute": rate} for clears, rate in steps] + [
        {"clears": None, "per_minute": "configured"}
    ]


def pace_wait(clears: int, window_wait: float, since_last: float, rate_per_minute: int) -> float:
    """Seconds to wait for the deployment's pace before a claim; 0 when a slot is free now.

    At most ``rate_per_minute`` clears in any 60 seconds (``clears`` in the window, the slot freeing
    in ``window_wait`` seconds), spaced at least ``60 / rate_per_minute`` seconds apart (the last
    ``since_last`` seconds ago): no burst on a dependency that just recovered. A wait is never
    shorter than 0.05 seconds.
    """
    wait = 60.0 / rate_per_minute - since_last
    if clears >= rate_per_minute:
        wait = max(wait, window_wait)
    return max(0.05, wait) if wait > 0 else 0.0
