"""Counters through Airflow's own metrics (StatsD or OpenTelemetry, whichever is configured).

Every name starts with ``retry_provider.``; class and category are part of the name (with
``-`` written as ``_``) because plain StatsD drops tags. The names are listed in docs/METRICS.md.
A metric never breaks a task: emitting is best effort.
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Any

log = logging.getLogger(__name__)

PREFIX = "retry_provider"


_NOT_NAME = r"[^0-9a-z]"  # `re` compiles it on first use
_NAMES: dict[tuple[str, ...], str] = {}
_NAMES_CACHE_SIZE = 1024


def _part(value: str) -> str:
    """A safe name segment: lower-case ASCII letters and digits, anything else ``_``."""
    return re.sub(_NOT_NAME, "_", value.lower()) or "none"


def name(*parts: str) -> str:
    """``retry_provider.<part>.<part>...``; remembered for the first 1024 combinations seen."""
    found = _NAMES.get(parts)
    if found is None:
        found = ".".join((PREFIX, *map(_part, parts)))
        if len(_NAMES) < _NAMES_CACHE_SIZE:
            _NAMES[parts] = found
    return found


@functools.cache
def _stats() -> Any:
    """Airflow's ``Stats``, imported on first use (importing this module stays free)."""
    from airflow.sdk.observability.stats import Stats

    return Stats


@functools.cache
def _module() -> Any:
    from airflow.sdk._shared.observability.metrics import stats

    return stats


def _dropped() -> bool:
    """Whether Airflow drops every metric here: its own ``Stats`` with no backend configured.

    Then a counter costs this check, not Airflow's name registry lookup and keyword handling. The
    backend is asked each time (a fork or ``Stats.initialize`` replaces it).
    """
    try:
        module = _module()
        backend = module._backend  # the global, when set: one call less
        if backend is None:
            backend = module._get_backend()
        return _stats().incr is module.incr and isinstance(backend, module.NoStatsLogger)
    except Exception:  # another Airflow's internals: emit as usual
        return False


def incr(*parts: str, count: int = 1) -> None:
    """Increment ``retry_provider.<part>.<part>...`` by ``count``."""
    if _dropped():
        return
    metric = name(*parts)
    try:
        if count == 1:
            _stats().incr(metric)  # Stats' own default; its wrapper then passes no keyword at all
        else:
            _stats().incr(metric, count)
    except Exception:  # metrics are best effort
        log.debug("could not emit %s", metric, exc_info=True)


def decision(failure_class: str, category: str, action: str) -> None:
    """One policy decision: ``retry_provider.decision.<class>.<category>`` and ``.action.<retry|dead_letter>``."""
    if _dropped():
        return
    incr("decision", failure_class, category)
    incr("action", action)


def letter(event: str, category: str | None = None) -> None:
    """A dead letter ``created``, ``refiled``, ``parked`` or ``resolved`` (with its category when known)."""
    incr("letter", event)
    if category:
        incr("letter", event, category)


def gauge(*parts: str, value: float) -> None:
    """Set the gauge ``retry_provider.<part>.<part>...`` to ``value``."""
    metric = name(*parts)
    try:
        _stats().gauge(metric, value)
    except Exception:  # metrics are best effort
        log.debug("could not emit %s", metric, exc_info=True)
