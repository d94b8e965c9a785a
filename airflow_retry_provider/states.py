"""The provider's state vocabulary, declared once at the bottom layer: every state a row or a value
moves through, and the named groups the code and the SQL ask about.

Pure (the standard library only): every layer imports it, ``policy/`` included. The state tables
(which process moves a row from which state to which) are ``dlq/states.py``; the migrations' ``CHECK``
constraints, the SQL's literals and the templates' per-status classes are checked against these
enums by ``tests/unit/test_states.py``.
"""

from __future__ import annotations

from enum import StrEnum


class State(StrEnum):
    """A state as PostgreSQL stores it: compares, formats and serialises as its text (``"dlq"``)."""

    @classmethod
    def values(cls) -> tuple[str, ...]:
        """Every state's text, in the order declared (the CLI's choices, the UI's filter, the migrations' CHECK)."""
        return tuple(str(member.value) for member in cls)


class LetterStatus(State):
    """``retry_dead_letters.status``: where a dead letter is in its life."""

    DLQ = "dlq"
    REPLAYING = "replaying"
    RESOLVED = "resolved"
    PARKED = "parked"
    DISMISSED = "dismissed"


LETTER_AT_REST = (LetterStatus.DLQ, LetterStatus.PARKED)
"""Waiting for a person, nothing started: the sweep checks them, a delivery they block is at risk or lost."""
LETTER_STARTED = (LetterStatus.REPLAYING, LetterStatus.RESOLVED)
"""Its work resumed: a replay is under way or the task instance succeeded."""
LETTER_OPEN = (*LETTER_AT_REST, LetterStatus.REPLAYING)
"""Not closed: a person may still dismiss it."""
LETTER_TERMINAL = (LetterStatus.RESOLVED, LetterStatus.DISMISSED)
"""Closed (a newer failed try reopens it); retention purges them."""


class ReplayOutcome(State):
    """``retry_replays.outcome``: what became of one replay (one clear) of a letter."""

    PENDING = "pending"
    UNKNOWN = "unknown"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CLEAR_FAILED = "clear-failed"
    ABANDONED = "abandoned"


REPLAY_OPEN = (ReplayOutcome.PENDING, ReplayOutcome.UNKNOWN)
"""Not decided yet: the sync asks Airflow about it."""
REPLAY_TERMINAL = (
    ReplayOutcome.SUCCEEDED,
    ReplayOutcome.FAILED,
    ReplayOutcome.CLEAR_FAILED,
    ReplayOutcome.ABANDONED,
)


class JobStatus(State):
    """``retry_replay_jobs.status``: where a replay job is."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"
    STOPPED = "stopped"


JOB_OPEN = (JobStatus.QUEUED, JobStatus.RUNNING)
JOB_TERMINAL = (JobStatus.DONE, JobStatus.CANCELLED, JobStatus.STOPPED)


class ItemOutcome(State):
    """``retry_replay_job_items.outcome``: what the job's driver did with one of its letters."""

    PENDING = "pending"
    CLEARED = "cleared"
    CLEAR_FAILED = "clear-failed"
    UNKNOWN = "unknown"
    REFUSED = "refused"
    INCLUDED = "included"
    CANCELLED = "cancelled"
    STOPPED = "stopped"


ITEM_OPEN = (ItemOutcome.PENDING,)
# the letter went back to Airflow: cleared itself, or downstream of an earlier letter of its job
ITEM_CLEARED = (ItemOutcome.CLEARED, ItemOutcome.INCLUDED)
ITEM_TERMINAL = tuple(outcome for outcome in ItemOutcome if outcome not in ITEM_OPEN)


class WorkUnitStatus(State):
    """``retry_work_units.status``: where a work unit of the ledger is."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    PARKED = "parked"


class AlertStatus(State):
    """``retry_alerts.status``: where an alert of the outbox is."""

    PENDING = "pending"
    SENT = "sent"
    DROPPED = "dropped"


class DeliveryStatus(State):
    """Where a delivery stands (the Deliveries view), and what ``retry_delivery_alerts.status`` records told."""

    LOST = "lost"
    AT_RISK = "at-risk"
    ON_TRACK = "on-track"
    SAVED = "saved"
    """Told once a delivery told at risk had every blocking letter replayed in time (dlq/deliveries.py)."""


DELIVERY_STANDINGS = (DeliveryStatus.LOST, DeliveryStatus.AT_RISK, DeliveryStatus.ON_TRACK)
"""A delivery's standing, worst first: the order the Deliveries view lists them in."""

COLUMNS: dict[str, type[State]] = {
    "retry_dead_letters.status": LetterStatus,
    "retry_replays.outcome": ReplayOutcome,
    "retry_replay_jobs.status": JobStatus,
    "retry_replay_job_items.outcome": ItemOutcome,
    "retry_work_units.status": WorkUnitStatus,
    "retry_alerts.status": AlertStatus,
    "retry_delivery_alerts.status": DeliveryStatus,
}
"""Each state column of the provider's tables and its enum (the SQL's literals are checked against it)."""
