"""The dead-letter queue: letters in PostgreSQL, written by the failure callback and replayed by hand.

The front door: the rest of the package imports what it uses of the queue from here
(``from airflow_retry_provider.dlq import DeadLetterStore``), never from the modules inside
(import-linter holds it, ``pyproject.toml``). Each name is loaded when first asked for, so a
worker's failure callback that needs ``file_dead_letter`` does not load the replay driver.

Inside, bottom-up (docs/ARCHITECTURE.md): ``states`` (the states, declared once) -> ``decide``
(the pure decisions) and ``filters`` (the letter filter, declared once) -> ``models`` -> ``store`` (the one owner of the queue's SQL) -> ``announce``
-> ``replay`` / ``sync`` / ``impact`` / ``infra`` -> ``driver`` -> ``sweeper`` -> ``infra_watch``.
"""

# The imports below are for type checkers only; ``__all__`` is ``_EXPORTS``'s names, which ruff cannot read.
# ruff: noqa: F401
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_retry_provider.dlq.announce import (
        DeliveriesHeld,
        FixDeployed,
        ImpactAssessed,
        JobFailed,
        LetterFiled,
        LetterParked,
        WorkUnitParked,
    )
    from airflow_retry_provider.dlq.callback import (
        closed_replay,
        file_dead_letter,
        filed_letter,
        resolve_dead_letter,
    )
    from airflow_retry_provider.dlq.deliveries import (
        DeliveryState,
        group_impacts,
        held_deliveries,
        todays_deliveries,
    )
    from airflow_retry_provider.dlq.driver import ReplayDriver, replay_and_wait
    from airflow_retry_provider.dlq.filters import LETTER_FILTERS, FilterField, LetterFilter
    from airflow_retry_provider.dlq.impact import ImpactWorker
    from airflow_retry_provider.dlq.infra import node_of
    from airflow_retry_provider.dlq.infra_watch import InfraWatcher
    from airflow_retry_provider.dlq.models import (
        Actor,
        ClosedReplay,
        FixNotice,
        Letter,
        NewLetter,
        ReplayRequest,
        ReplayResult,
        newest_letter,
        split_replayable,
    )
    from airflow_retry_provider.dlq.replay import DEFAULT_SELECTION_LIMIT, ReplayEngine, number_letters
    from airflow_retry_provider.dlq.schema import apply_schema
    from airflow_retry_provider.dlq.store import (
        DeadLetterStore,
        FailedTry,
        FileResult,
        JobError,
        JobStore,
        JobView,
        StoredImpact,
    )
    from airflow_retry_provider.dlq.sweeper import run_sweeper

_EXPORTS = {
    "DeliveriesHeld": "announce",
    "FixDeployed": "announce",
    "ImpactAssessed": "announce",
    "JobFailed": "announce",
    "LetterFiled": "announce",
    "LetterParked": "announce",
    "WorkUnitParked": "announce",
    "DeliveryState": "deliveries",
    "group_impacts": "deliveries",
    "held_deliveries": "deliveries",
    "todays_deliveries": "deliveries",
    "file_dead_letter": "callback",
    "resolve_dead_letter": "callback",
    "filed_letter": "callback",
    "closed_replay": "callback",
    "ReplayDriver": "driver",
    "ImpactWorker": "impact",
    "InfraWatcher": "infra_watch",
    "node_of": "infra",
    "replay_and_wait": "driver",
    "JobError": "store",
    "JobStore": "store",
    "JobView": "store",
    "Actor": "models",
    "FixNotice": "models",
    "Letter": "models",
    "NewLetter": "models",
    "ReplayRequest": "models",
    "ReplayResult": "models",
    "ClosedReplay": "models",
    "newest_letter": "models",
    "split_replayable": "models",
    "DEFAULT_SELECTION_LIMIT": "replay",
    "ReplayEngine": "replay",
    "number_letters": "replay",
    "apply_schema": "schema",
    "DeadLetterStore": "store",
    "FailedTry": "store",
    "FileResult": "store",
    "FilterField": "filters",
    "LETTER_FILTERS": "filters",
    "LetterFilter": "filters",
    "StoredImpact": "store",
    "run_sweeper": "sweeper",
}
"""Each name of the front door and the module of ``dlq/`` that defines it."""

__all__ = list(_EXPORTS)  # each name once, in _EXPORTS and in the imports above


def __getattr__(name: str) -> Any:
    """Load ``name`` from its module on first use (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
