"""What the dead-letter queue announces: a letter filed or parked, a replay job failed, a fix deployed,
a work unit parked.

Each announcement is a frozen :class:`~airflow_retry_provider.announce.Event`, told with
``announce.tell(LetterFiled(...))``. The queue never imports who listens: it tells the listeners of
the provider's one registry (:mod:`airflow_retry_provider.announce`, where the alerts register).
Announcing never raises: a listener's error is logged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from airflow_retry_provider import announce

if TYPE_CHECKING:
    from airflow_retry_provider.database import ProviderDatabase
    from airflow_retry_provider.dlq.models import FixNotice, Letter, NewLetter, ReplayJob
    from airflow_retry_provider.dlq.store import FileResult
    from airflow_retry_provider.policy.impact import Impact


@dataclass(frozen=True)
class QueueEvent(announce.Event):
    """Something happened in the dead-letter queue of ``db``, the provider's database."""

    db: ProviderDatabase


@dataclass(frozen=True)
class LetterFiled(QueueEvent):
    """A letter was filed: created, or changed (failed again, parked at the cap, reopened).

    :param letter: the letter as filed.
    :param result: what filing it did (its id, status, whether anything changed).
    :param context: the task's context, when a failure callback filed it.
    """

    name: ClassVar[str] = "filed"
    letter: NewLetter
    result: FileResult
    context: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class ImpactAssessed(QueueEvent):
    """What letter ``letter_id`` blocks was computed, when it was filed or refreshed by the sweeper:
    ``impact``, the deliveries it puts at risk (``policy.impact.Impact``)."""

    name: ClassVar[str] = "impact"
    letter_id: int
    letter: NewLetter
    impact: Impact


@dataclass(frozen=True)
class DeliveriesHeld(QueueEvent):
    """The sweeper found deliveries that the tasks ``dependency``'s open breaker (open since
    ``opened_at``) holds put at risk: ``held``, each a ``dlq.deliveries.HeldDelivery`` with its
    latest start."""

    name: ClassVar[str] = "held"
    dependency: str
    opened_at: datetime
    held: Sequence[Any]


@dataclass(frozen=True)
class LetterParked(QueueEvent):
    """The sync parked ``letter`` (``reason``): its task instance or run no longer exists in Airflow."""

    name: ClassVar[str] = "parked"
    letter: Letter
    reason: str


@dataclass(frozen=True)
class JobFailed(QueueEvent):
    """Replay ``job`` ended with letters not cleared (``counts``: outcome -> letters)."""

    name: ClassVar[str] = "job_failed"
    job: ReplayJob
    counts: Mapping[str, int]


@dataclass(frozen=True)
class FixDeployed(QueueEvent):
    """A newer DAG version may fix a root-cause group (``notice``); told in the transaction that
    records the notice (``cur``, where a listener writes), once per version and group."""

    name: ClassVar[str] = "fix_deployed"
    cur: Any
    notice: FixNotice


@dataclass(frozen=True)
class WorkUnitParked(QueueEvent):
    """The work-unit sweeper parked work unit ``key`` (held by ``owner_ti``) for a person (``detail``)
    and filed letter ``letter_id`` for it."""

    name: ClassVar[str] = "unit_parked"
    key: str
    owner_ti: str | None
    detail: str
    letter_id: int | None
