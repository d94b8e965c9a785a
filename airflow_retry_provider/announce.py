"""Who is told what happened: the dead-letter queue and the breakers announce, listeners act.

Neither imports who listens: listeners register here (the alerts do, once, ``alerts/__init__.py``),
the way stamina's ``instrumentation/_hooks.py`` lets its core call hooks it does not know. The
dead-letter queue announces through ``dlq/announce.py``, the breakers through
``breaker/announce.py``. The default listeners are the modules named in ``DEFAULT_LISTENERS``,
imported on the first announcement (a worker's failure callback imports nothing else that would
register them). Announcing never raises: a listener's error is logged.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Literal

log = logging.getLogger(__name__)

DEFAULT_LISTENERS = ("airflow_retry_provider.alerts",)
"""Modules that register their listeners when imported."""

Event = Literal["filed", "impact", "parked", "job_failed", "fix_deployed", "down", "recovered", "held"]
Hook = Callable[..., Any]
AfterCommit = Callable[[], Any]


@dataclass(frozen=True)
class Listener:
    """What one listener wants to hear; ``db`` is the :class:`~airflow_retry_provider.database.ProviderDatabase`
    the event happened in.

    The dead-letter queue (``dlq/announce.py``):

    :param filed: ``(db, letter, result, context)``: a letter was filed (created or changed).
    :param impact: ``(db, letter_id, letter, impact)``: what a letter blocks was computed, when it
        was filed or refreshed by the sweeper (``policy.impact.Impact``: its deliveries at risk).
    :param parked: ``(db, letter, reason)``: the sync parked a letter whose task instance vanished.
    :param job_failed: ``(db, job, counts)``: a replay job ended with letters not cleared.
    :param fix_deployed: ``(cursor, notice, db)``: a newer DAG version may fix a root-cause group;
        called in the transaction that records the notice (once per version and group).
    :param held: ``(db, dependency, opened_at, held)``: the sweeper found deliveries that the tasks
        an open breaker holds put at risk (``dlq.deliveries.HeldDelivery``, with their latest start).

    The breakers (``breaker/announce.py``), called in the transaction that made the transition,
    under the dependency's row lock:

    :param down: ``(cursor, outage, db)``: the outage is told as begun: at its first probe (one
        cool-down after opening, when the tasks that tried meanwhile are held), when a person
        forces it open, or when it ends before either.
    :param recovered: ``(cursor, outage, db)``: the outage ended: the probe succeeded, or a person
        forced the breaker closed.

    A hook called with a cursor writes in that transaction (what it writes commits with the change
    or not at all) and may return an action to run after the commit.
    """

    filed: Hook | None = None
    impact: Hook | None = None
    parked: Hook | None = None
    job_failed: Hook | None = None
    fix_deployed: Hook | None = None
    down: Hook | None = None
    recovered: Hook | None = None
    held: Hook | None = None


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
            except Exception:  # a listener that cannot load must not stop a letter or a breaker
                log.exception("airflow-retry-provider: could not load the listeners of %s", module)
    return tuple(_listeners)


def tell(
    event: Event, *args: Any, each: Callable[[], AbstractContextManager[Any]] = nullcontext
) -> list[AfterCommit]:
    """Call each listener's ``event`` hook with ``args``; what they returned that is not None (from a
    hook called in a transaction: the actions to run after its commit).

    :param each: a context around each hook (the breakers' savepoint: a hook that fails leaves
        nothing behind in the transaction).
    """
    later: list[AfterCommit] = []
    for listener in listeners():
        hook = getattr(listener, event)
        if hook is None:
            continue
        try:
            with each():
                action = hook(*args)
        except Exception:  # it happened whatever a listener makes of it
            log.exception("airflow-retry-provider: a listener of %r failed", event)
            continue
        if action is not None:
            later.append(action)
    return later


def run_after_commit(actions: Sequence[AfterCommit]) -> None:
    """Run what the listeners asked for once the change committed; never raises."""
    for action in actions:
        try:
            action()
        except Exception:
            log.exception("airflow-retry-provider: an action after an announcement failed")
