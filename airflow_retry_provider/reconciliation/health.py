"""Per-connector health from extraction events: a pure function that the SQL version must match.

Events are grouped into runs by (workspace, connector, run_id). A run lasts from its first
``started_at`` to its last finish (``started_at + duration_ms``) and failed if any of its events
is an ``error``. Only events that finished at or before ``as_of`` exist for the report (later ones
are ignored, so a report for a past ``as_of`` is reproducible). A run is in the window when its
finish is in ``(as_of - window, as_of]``.

Percentiles interpolate exactly like PostgreSQL's ``percentile_cont``: position ``p * (n - 1)``
over the ascending durations, ``lo + (pos - floor(pos)) * (hi - lo)`` in double precision.
Standard library only: no I/O, no clock.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from fractions import Fraction

from airflow_retry_provider.reconciliation.models import ConnectorHealth, ExtractionEvent, HealthStatus

__all__ = [
    "DEFAULT_WINDOW",
    "DEGRADED_ERROR_RATE",
    "FAILING_ERROR_RATE",
    "connector_health",
    "health_status",
    "percentile_cont",
]

#: The default health window.
DEFAULT_WINDOW = timedelta(hours=24)
#: A connector with ``failed_runs / runs`` at or above this is ``failing``.
FAILING_ERROR_RATE = Fraction(1, 2)
#: A connector with ``failed_runs / runs`` at or above this (and below failing) is ``degraded``.
DEGRADED_ERROR_RATE = Fraction(1, 10)

_MICROSECOND = timedelta(microseconds=1)


def percentile_cont(ordered: Sequence[float], fraction: float) -> float | None:
    """The ``fraction`` percentile of ascending values, as PostgreSQL's ``percentile_cont`` computes it.

    :param ordered: the values, sorted ascending.
    :param fraction: between 0 and 1 inclusive.
    :returns: ``None`` for no values, else the linearly interpolated value.
    """
    if not 0 <= fraction <= 1:
        raise ValueError(f"percentile {fraction!r} is not between 0 and 1")
    if not ordered:
        return None
    position = fraction * (len(ordered) - 1)
    first = math.floor(position)
    second = math.ceil(position)
    low = float(ordered[first])
    if first == second:
        return low
    return low + (position - first) * (float(ordered[second]) - low)


def health_status(runs: int, failed_runs: int) -> HealthStatus:
    """``stopped`` without runs, else ``failing`` / ``degraded`` / ``healthy`` by exact error rate."""
    if runs == 0:
        return "stopped"
    rate = Fraction(failed_runs, runs)
    if rate >= FAILING_ERROR_RATE:
        return "failing"
    if rate >= DEGRADED_ERROR_RATE:
        return "degraded"
    return "healthy"


@dataclass
class _Run:
    started_at: datetime
    finished_at: datetime
    failed: bool


def connector_health(
    events: Iterable[ExtractionEvent],
    as_of: datetime,
    window: timedelta = DEFAULT_WINDOW,
    expected: Iterable[tuple[str, str]] = (),
) -> list[ConnectorHealth]:
    """Summarise each connector's runs that finished in ``(as_of - window, as_of]``.

    Connectors listed: every one with an event finished by ``as_of`` (even if only before the
    window, then ``stopped``), plus every ``expected`` one.

    :param events: extraction events of any workspaces and connectors.
    :param as_of: the end of the window (timezone-aware); later events are ignored.
    :param window: the window length, positive.
    :param expected: (workspace_id, connector_id) pairs that should be running.
    :returns: one :class:`ConnectorHealth` per connector, sorted by workspace and connector.
    """
    if as_of.tzinfo is None or as_of.utcoffset() is None:
        raise ValueError("as_of must be timezone-aware")
    if window <= timedelta(0):
        raise ValueError(f"window must be positive, got {window}")
    connectors: set[tuple[str, str]] = set(expected)
    runs: dict[tuple[str, str, str], _Run] = {}
    for event in events:
        finished = event.finished_at
        if finished > as_of:
            continue
        connectors.add((event.workspace_id, event.connector_id))
        key = (event.workspace_id, event.connector_id, event.run_id)
        run = runs.get(key)
        if run is None:
            runs[key] = _Run(event.started_at, finished, event.status == "error")
        else:
            run.started_at = min(run.started_at, event.started_at)
            run.finished_at = max(run.finished_at, finished)
            run.failed = run.failed or event.status == "error"

    start = as_of - window
    in_window: dict[tuple[str, str], list[_Run]] = {c: [] for c in connectors}
    for (workspace_id, connector_id, _run_id), run in runs.items():
        if run.finished_at > start:
            in_window[(workspace_id, connector_id)].append(run)
    return [_summarise(ws, conn, in_window[(ws, conn)], as_of) for ws, conn in sorted(connectors)]


def _summarise(workspace_id: str, connector_id: str, runs: list[_Run], as_of: datetime) -> ConnectorHealth:
    # Whole microseconds divided once: the same double as PostgreSQL's
    # extract(epoch from interval) * 1000 cast to float8.
    durations = sorted((r.finished_at - r.started_at) // _MICROSECOND / 1000 for r in runs)
    failed = sum(1 for r in runs if r.failed)
    last_ok = max((r.finished_at for r in runs if not r.failed), default=None)
    return ConnectorHealth(
        workspace_id=workspace_id,
        connector_id=connector_id,
        runs=len(runs),
        failed_runs=failed,
        error_rate=failed / len(runs) if runs else None,
        p50_ms=percentile_cont(durations, 0.5),
        p95_ms=percentile_cont(durations, 0.95),
        last_run_at=max((r.finished_at for r in runs), default=None),
        freshness_seconds=None if last_ok is None else (as_of - last_ok) // _MICROSECOND / 1_000_000,
        status=health_status(len(runs), failed),
    )
