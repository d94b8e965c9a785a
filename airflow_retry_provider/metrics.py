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


_NOT_NAME = re.compile(r"[^0-9a-z]")


def _part(value: str) -> str:
    """A safe name segment: lower-case ASCII letters and digits, anything else ``_``."""
    return _NOT_NAME.sub("_", value.lower()) or "none"


def name(*parts: str) -> str:
    """``retry_provider.<part>.<part>...``."""
    return ".".join((PREFIX, *map(_part, parts)))


@functools.cache
def _stats() -> Any:
    """Airflow's ``Stats``, imported on first use (importing this module stays free)."""
    from airflow.sdk.observability.stats import Stats

    return Stats


def incr(*parts: str, count: int = 1) -> None:
    """Increment ``retry_provider.<part>.<part>...`` by ``count``."""
    metric = name(*parts)
    try:
        _stats().incr(metric, count)
    except Exception:  # metrics are best effort
        log.debug("could not emit %s", metric, exc_info=True)


def decision(failure_class: str, category: str, action: str) -> None:
    """One policy decision: ``retry_provider.decision.<class>.<category>`` and ``.action.<retry|dead_letter>``."""
    incr("decision", failure_class, category)
    incr("action", action)


def infra_try(category: str) -> None:
    """A try that ended with no exception, recognised as ``infra/<category>``: ``retry_provider.infra.<category>``."""
    incr("infra", category)


def letter(event: str, category: str | None = None) -> None:
    """A dead letter ``created``, ``refiled``, ``reclassified``, ``parked`` or ``resolved`` (with its category when known)."""
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
