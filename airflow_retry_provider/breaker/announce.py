"""What the breakers announce: a dependency down, and recovered.

The breaker does not import who listens: it tells the listeners of the provider's one registry
(:mod:`airflow_retry_provider.announce`, where the alerts register), as the dead-letter queue does.
A listener is called inside the transaction that made the transition, with its cursor, under the
dependency's row lock, each inside a savepoint: what it writes there (the alert outbox's rows)
commits with the transition or not at all, so an outage is told once however many workers race on
it, and a listener that fails leaves nothing behind. It may return an action to run after the
commit (the alerts send what they queued). Announcing never raises: a listener's error is logged.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from airflow_retry_provider import announce
from airflow_retry_provider.announce import AfterCommit
from airflow_retry_provider.breaker.sql import query

if TYPE_CHECKING:
    from airflow_retry_provider.database import ProviderDatabase


@dataclass(frozen=True)
class Outage:
    """One outage of a dependency (a row of ``retry_breaker_outages``), as the alerts tell it.

    :param dependency: the dependency's name.
    :param opened_at: when the breaker opened (the outage's id, with the dependency).
    :param closed_at: when it closed again; None while it lasts.
    :param failures_at_open: unwell failures in the window when it opened ...
    :param calls_at_open: ... out of this many calls.
    :param opened_by: the task instance whose failure opened it, or ``user:<name>``.
    :param opened_reason: why (the failure's class and category, or the person's reason).
    :param tasks_held: task instances held during the outage.
    :param dags_held: DAGs they belong to.
    :param holds: tries held back; each would have spent an attempt on a dependency that was down.
    :param released: held task instances that ran again (probes included).
    :param expired: held task instances that waited their longest and were dead-lettered.
    :param probes: tries that ran as the probe.
    :param held_now: task instances held at this moment (released when they next ask, after a close).
    :param dags_now: the DAGs of those.
    :param now: the database's clock when this was read.
    """

    dependency: str
    opened_at: datetime
    closed_at: datetime | None
    failures_at_open: int
    calls_at_open: int
    opened_by: str
    opened_reason: str
    tasks_held: int
    dags_held: int
    holds: int
    released: int
    expired: int
    probes: int
    held_now: int
    dags_now: int
    now: datetime
    id: int = 0


@dataclass(frozen=True)
class OutageEvent(announce.Event):
    """Something happened to an outage, told in the transaction that made the breaker's transition.

    :param cur: that transaction's cursor (a listener writes in it).
    :param outage: the outage.
    :param db: the provider's database.
    """

    cur: Any
    outage: Outage
    db: ProviderDatabase


@dataclass(frozen=True)
class DependencyDown(OutageEvent):
    """The outage is told as begun: at its first probe (one cool-down after opening, when the tasks
    that tried meanwhile are held), when a person forces it open, or when it ends before either."""

    name: ClassVar[str] = "down"


@dataclass(frozen=True)
class DependencyRecovered(OutageEvent):
    """The outage ended: the probe succeeded, or a person forced the breaker closed."""

    name: ClassVar[str] = "recovered"


def tell(event: OutageEvent) -> list[AfterCommit]:
    """Tell each listener ``event`` in its transaction, each in a savepoint; the actions to run after it."""
    cur = event.cur

    @contextmanager
    def savepoint() -> Iterator[None]:
        cur.execute(query("listener_savepoint"))
        try:
            yield
        except Exception:
            cur.execute(query("listener_rollback"))
            raise
        cur.execute(query("listener_release"))

    return announce.tell(event, each=savepoint)
