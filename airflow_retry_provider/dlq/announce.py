"""What the dead-letter queue announces: a letter filed or parked, a replay job failed, a fix deployed.

The queue never imports who listens: it tells the listeners of the provider's one registry
(:mod:`airflow_retry_provider.announce`, where the alerts register). Announcing never raises: a
listener's error is logged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from airflow_retry_provider import announce

if TYPE_CHECKING:
    from airflow_retry_provider.database import ProviderDatabase
    from airflow_retry_provider.dlq.models import FixNotice, Letter, NewLetter, ReplayJob
    from airflow_retry_provider.dlq.store import FileResult
    from airflow_retry_provider.policy.impact import Impact


def filed(
    db: ProviderDatabase, letter: NewLetter, result: FileResult, context: Mapping[str, Any] | None = None
) -> None:
    """A letter was filed: created, or changed (failed again, parked at the cap, reopened)."""
    announce.tell("filed", db, letter, result, context)


def impact_assessed(db: ProviderDatabase, letter_id: int, letter: NewLetter, impact: Impact) -> None:
    """What ``letter`` blocks was computed (filed or refreshed): the deliveries it puts at risk."""
    announce.tell("impact", db, letter_id, letter, impact)


def deliveries_held(db: ProviderDatabase, dependency: str, opened_at: datetime, held: Sequence[Any]) -> None:
    """The tasks ``dependency``'s open breaker holds put deliveries at risk (``dlq.deliveries.HeldDelivery``)."""
    announce.tell("held", db, dependency, opened_at, held)


def parked(db: ProviderDatabase, letter: Letter, reason: str) -> None:
    """The sync parked ``letter``: its task instance or run no longer exists in Airflow."""
    announce.tell("parked", db, letter, reason)


def job_failed(db: ProviderDatabase, job: ReplayJob, counts: dict[str, int]) -> None:
    """Replay ``job`` ended with letters not cleared (``counts``: outcome -> letters)."""
    announce.tell("job_failed", db, job, counts)


def fix_deployed(cur: Any, notice: FixNotice, db: ProviderDatabase) -> list[Callable[[], Any]]:
    """A newer DAG version may fix a root-cause group: listeners write in ``cur``; the actions to run after the commit."""
    return announce.tell("fix_deployed", cur, notice, db)
