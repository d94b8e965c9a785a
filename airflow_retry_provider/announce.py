"""Who is told what happened: the dead-letter queue and the breakers announce, listeners act.

Neither imports who listens, the way stamina's ``instrumentation/_hooks.py`` lets its core call
hooks it does not know. An announcement is one frozen dataclass, a subclass of :class:`Event`
(the dead-letter queue's in ``dlq/announce.py``, the breakers' in ``breaker/announce.py``); a
listener is any callable that takes one (:class:`Listener`) and ignores the events it does not
want. Listeners register with :func:`register`, or as an entry point of the group
``airflow_retry_provider.listeners`` (the alerts do, in ``pyproject.toml``), loaded on the first
announcement so a worker's failure callback hears them without importing them. Announcing never
raises: a listener's error is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, ClassVar, Protocol

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "airflow_retry_provider.listeners"
"""The entry points whose object is a listener, registered on the first announcement."""

AfterCommit = Callable[[], Any]


@dataclass(frozen=True)
class Event:
    """One announcement; each kind is a frozen subclass naming what happened in its fields."""

    name: ClassVar[str] = "event"
    """The kind's short name, as logs say it (``filed``, ``down``)."""


class Listener(Protocol):
    """Hears every announcement and acts on the kinds it wants.

    Called with an event that carries a cursor (the announcer's transaction), it may write in that
    transaction (what it writes commits with the change or not at all) and return an action to run
    after the commit; otherwise it returns None.
    """

    def __call__(self, event: Event) -> AfterCommit | None: ...


_listeners: list[Listener] = []
_defaults_loaded = False


def register(listener: Listener) -> None:
    """Add ``listener`` (once: registering the same one again changes nothing)."""
    if listener not in _listeners:
        _listeners.append(listener)


def unregister(listener: Listener) -> None:
    """Remove ``listener`` if it is registered."""
    if listener in _listeners:
        _listeners.remove(listener)


def listeners() -> tuple[Listener, ...]:
    """The registered listeners, those of the entry points loaded first."""
    global _defaults_loaded
    if not _defaults_loaded:
        _defaults_loaded = True
        for entry_point in entry_points(group=ENTRY_POINT_GROUP):
            try:
                register(entry_point.load())
            except Exception:  # a listener that cannot load must not stop a letter or a breaker
                log.exception("airflow-retry-provider: could not load the listener %s", entry_point.value)
    return tuple(_listeners)


def tell(event: Event, each: Callable[[], AbstractContextManager[Any]] = nullcontext) -> list[AfterCommit]:
    """Tell each listener ``event``; what they returned that is not None (from a listener told in a
    transaction: the actions to run after its commit).

    :param each: a context around each listener (the breakers' savepoint: a listener that fails
        leaves nothing behind in the transaction).
    """
    later: list[AfterCommit] = []
    for listener in listeners():
        try:
            with each():
                action = listener(event)
        except Exception:  # it happened whatever a listener makes of it
            log.exception("airflow-retry-provider: a listener of %r failed", event.name)
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
