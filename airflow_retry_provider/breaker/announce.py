"""Who is told when a dependency goes down and when it recovers: the breaker announces, listeners act.

The breaker does not import who listens (the alerts do, ``alerts/__init__.py``), the way
``dlq/announce.py`` lets the dead-letter queue announce a letter. A listener is called inside the
transaction that made the transition, with its cursor, under the dependency's row lock: what it
writes there (the alert outbox's rows) commits with the transition or not at all, so an outage is
told once however many workers race on it. It may return an action to run after the commit (the
alerts send what they queued). The default listeners are the modules in ``DEFAULT_LISTENERS``,
imported on the first announcement. Announcing never raises: a listener's error is logged.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from airflow_retry_provider.breaker.sql import query

if TYPE_CHECKING:
    from airflow_retry_provider.database import ProviderDatabase

log = logging.getLogger(__name__)

DEFAULT_LISTENERS = ("airflow_retry_provider.alerts",)
"""Modules that register their listeners when imported."""

AfterCommit = Callable[[], Any]


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
class Listener:
    """What one listener wants to hear; each hook gets ``(cursor, outage, db)``.

    :param down: the outage is told as begun: at its first probe (one cool-down after opening, when
        the tasks that tried meanwhile are held), when a person forces it open, or when it ends
        before either.
    :param recovered: the outage ended: the probe succeeded, or a person forced the breaker closed.
    """

    down: Callable[[Any, Outage, ProviderDatabase], AfterCommit | None] | None = None
    recovered: Callable[[Any, Outage, ProviderDatabase], AfterCommit | None] | None = None


_listeners: list[Listener] = []
_defaults_loaded = False


def register(listener: Listener) -> None:
    """Add ``listener`` (once: registering the same one again changes nothing)."""
    if listener not in _listeners:
        _listeners.append(listener)


def listeners() -> tuple[Listener, ...]:
    """The registered listeners, the default ones imported first."""
    global _defaults_loaded
    if not _defaults_loaded:
        _defaults_loaded = True
        for module in DEFAULT_LISTENERS:
            try:
                importlib.import_module(module)
            except Exception:  # a listener that cannot load must not stop the breaker
                log.exception("airflow-retry-provider: could not load the listeners of %s", module)
    return tuple(_listeners)


def tell(event: str, cur: Any, outage: Outage, db: ProviderDatabase) -> list[AfterCommit]:
    """Call each listener's ``event`` hook in the caller's transaction; the actions to run after it."""
    later: list[AfterCommit] = []
    for listener in listeners():
        hook = getattr(listener, event)
        if hook is None:
            continue
        cur.execute(query("listener_savepoint"))
        try:
            action = hook(cur, outage, db)
        except Exception:  # the transition happened whatever a listener makes of it
            cur.execute(query("listener_rollback"))
            log.exception("airflow-retry-provider: a listener of %r failed", event)
            continue
        cur.execute(query("listener_release"))
        if action is not None:
            later.append(action)
    return later


def run_after_commit(actions: Sequence[AfterCommit]) -> None:
    """Run what the listeners asked for once the transition committed; never raises."""
    for action in actions:
        try:
            action()
        except Exception:
            log.exception("airflow-retry-provider: an action after a breaker transition failed")
