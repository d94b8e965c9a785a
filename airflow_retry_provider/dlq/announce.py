"""Who is told when a letter is filed or parked, or a replay job ends with letters not cleared.

The dead-letter queue announces what happened here and never imports who listens: listeners
register (the alerts do, ``alerts/__init__.py``), the way stamina's ``instrumentation/_hooks.py``
lets its core call hooks it does not know. The default listeners are the modules named in
``DEFAULT_LISTENERS``, imported on the first announcement (a worker's failure callback imports
nothing else that would register them). Announcing never raises: a listener's error is logged.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_retry_provider.database import ProviderDatabase
    from airflow_retry_provider.dlq.models import FixNotice, Letter, NewLetter, ReplayJob
    from airflow_retry_provider.dlq.store import FileResult

log = logging.getLogger(__name__)

DEFAULT_LISTENERS = ("airflow_retry_provider.alerts",)
"""Modules that register their listeners when imported."""


@dataclass(frozen=True)
class Listener:
    """What one listener wants to hear; each is called with the database the event happened in.

    :param filed: ``(db, letter, result, context)``: a letter was filed (created or changed).
    :param parked: ``(db, letter, reason)``: the sync parked a letter whose task instance vanished.
    :param job_failed: ``(db, job, counts)``: a replay job ended with letters not cleared.
    :param fix_deployed: ``(cursor, notice, db)``: a newer DAG version may fix a root-cause
        group; called in the transaction that records the notice (once per version and group),
        it may return an action to run after the commit.
    """

    filed: Callable[[ProviderDatabase, NewLetter, FileResult, Mapping[str, Any] | None], Any] | None = None
    parked: Callable[[ProviderDatabase, Letter, str], Any] | None = None
    job_failed: Callable[[ProviderDatabase, ReplayJob, dict[str, int]], Any] | None = None
    fix_deployed: Callable[[Any, FixNotice, ProviderDatabase], Callable[[], Any] | None] | None = None


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
            except Exception:  # a listener that cannot load must not stop a letter being filed
                log.exception("airflow-retry-provider: could not load the listeners of %s", module)
    return tuple(_listeners)


def filed(
    db: ProviderDatabase, letter: NewLetter, result: FileResult, context: Mapping[str, Any] | None = None
) -> None:
    """A letter was filed: created, or changed (failed again, parked at the cap, reopened)."""
    _tell("filed", db, letter, result, context)


def parked(db: ProviderDatabase, letter: Letter, reason: str) -> None:
    """The sync parked ``letter``: its task instance or run no longer exists in Airflow."""
    _tell("parked", db, letter, reason)


def job_failed(db: ProviderDatabase, job: ReplayJob, counts: dict[str, int]) -> None:
    """Replay ``job`` ended with letters not cleared (``counts``: outcome -> letters)."""
    _tell("job_failed", db, job, counts)


def fix_deployed(cur: Any, notice: FixNotice, db: ProviderDatabase) -> list[Callable[[], Any]]:
    """A newer DAG version may fix a root-cause group: listeners write in ``cur``; the actions to run after the commit."""
    after: list[Callable[[], Any]] = []
    for listener in listeners():
        if listener.fix_deployed is None:
            continue
        try:
            action = listener.fix_deployed(cur, notice, db)
        except Exception:  # the notice is recorded whatever a listener makes of it
            log.exception("airflow-retry-provider: a listener of 'fix_deployed' failed")
            continue
        if action is not None:
            after.append(action)
    return after


def _tell(event: str, *args: Any) -> None:
    for listener in listeners():
        hook = getattr(listener, event)
        if hook is None:
            continue
        try:
            hook(*args)
        except Exception:  # the event happened whatever a listener makes of it
            log.exception("airflow-retry-provider: a listener of %r failed", event)
