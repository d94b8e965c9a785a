"""Frozen values for medallion reconciliation, parsed from JSON or from database rows.

Every ``from_dict`` accepts a mapping (a JSON object or a dict row from PostgreSQL) and
raises :class:`SnapshotError` naming the field path and the bad value, e.g.
``bronze_tables[3].processed_at: 'yesterday' is not an ISO 8601 timestamp with offset``.
Timestamps may be ISO 8601 strings with an offset or timezone-aware ``datetime`` objects;
both are normalised to UTC. Unknown keys are ignored so rows may carry extra columns.

Standard library only: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

from airflow_retry_provider.policy.fields import FieldError, at, show

__all__ = [
    "LAYERS",
    "MAX_DURATION_MS",
    "ConnectorHealth",
    "EventLog",
    "EventStatus",
    "ExtractionEvent",
    "Finding",
    "FindingKind",
    "HealthStatus",
    "Layer",
    "RunStatus",
    "SnapshotError",
    "Snapshot",
    "BronzeTable",
    "SourceRun",
    "Transform",
    "TransformLayer",
    "format_timestamp",
    "parse_timestamp",
]

Layer = Literal["bronze", "silver", "gold"]
TransformLayer = Literal["silver", "gold"]
FindingKind = Literal["missing", "stale"]
RunStatus = Literal["ok", "failed", "running"]
EventStatus = Literal["ok", "error"]
HealthStatus = Literal["healthy", "degraded", "failing", "stopped"]

#: The medallion layers in report order (not alphabetical).
LAYERS: tuple[Layer, ...] = ("bronze", "silver", "gold")
_TRANSFORM_LAYERS: tuple[TransformLayer, ...] = ("silver", "gold")
_RUN_STATUSES: tuple[RunStatus, ...] = ("ok", "failed", "running")
_EVENT_STATUSES: tuple[EventStatus, ...] = ("ok", "error")
_KINDS: tuple[FindingKind, ...] = ("missing", "stale")
_HEALTH_STATUSES: tuple[HealthStatus, ...] = ("healthy", "degraded", "failing", "stopped")


class SnapshotError(FieldError):
    """Input that does not describe a valid snapshot; the message names the field path and the value."""


# --------------------------------------------------------------------------- field parsing


def _object(value: object, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SnapshotError(f"expected an object, got {show(value)}", path=path or "input")
    return value


def _array(value: object, path: str) -> Sequence[Any]:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise SnapshotError(f"expected an array, got {show(value)}", path=path)
    return value


def _get(data: Mapping[str, Any], path: str, name: str) -> Any:
    if name not in data:
        raise SnapshotError("missing field", path=at(path, name))
    return data[name]


def _text(data: Mapping[str, Any], path: str, name: str) -> str:
    value = _get(data, path, name)
    if not isinstance(value, str) or not value:
        raise SnapshotError(f"{show(value)} is not a non-empty string", path=at(path, name))
    return value


def _flag(data: Mapping[str, Any], path: str, name: str) -> bool:
    value = _get(data, path, name)
    if not isinstance(value, bool):
        raise SnapshotError(f"{show(value)} is not true or false", path=at(path, name))
    return value


#: The largest ``duration_ms`` accepted: PostgreSQL's ``integer`` maximum.
MAX_DURATION_MS = 2**31 - 1


def _count(data: Mapping[str, Any], path: str, name: str, maximum: int | None = None) -> int:
    value = _get(data, path, name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SnapshotError(f"{show(value)} is not a non-negative integer", path=at(path, name))
    if maximum is not None and value > maximum:
        raise SnapshotError(f"{show(value)} is larger than {maximum}", path=at(path, name))
    return value


def _number(data: Mapping[str, Any], path: str, name: str, *, nullable: bool = False) -> float | None:
    value = _get(data, path, name)
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise SnapshotError(f"{show(value)} is not a number", path=at(path, name))
    return float(value)


def _choice(data: Mapping[str, Any], path: str, name: str, choices: tuple[str, ...]) -> Any:
    value = _get(data, path, name)
    if not isinstance(value, str) or value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        raise SnapshotError(f"{show(value)} is not one of {allowed}", path=at(path, name))
    return value


def parse_timestamp(value: object, path: str) -> datetime:
    """Parse an ISO 8601 timestamp with an offset (or an aware ``datetime``) into UTC.

    :param value: the raw value, a string such as ``2026-11-30T10:00:00-03:00`` or a datetime.
    :param path: the field path named in the error, e.g. ``bronze_tables[3].processed_at``.
    :raises SnapshotError: when the value is not a timestamp or has no offset.
    """
    parsed: datetime | None = None
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            parsed = None
    if parsed is None or parsed.tzinfo is None or parsed.utcoffset() is None:
        raise SnapshotError(f"{show(value)} is not an ISO 8601 timestamp with offset", path=path)
    try:
        return parsed.astimezone(timezone.utc)
    except OverflowError:
        raise SnapshotError(f"{show(value)} is out of range in UTC", path=path) from None


def format_timestamp(value: datetime | None) -> str | None:
    """Render a timestamp as ISO 8601 in UTC (``2026-11-30T10:00:00+00:00``); ``None`` stays ``None``."""
    return None if value is None else value.astimezone(timezone.utc).isoformat()


def _timestamp(data: Mapping[str, Any], path: str, name: str) -> datetime:
    value = _get(data, path, name)
    return parse_timestamp(value, at(path, name))


def _optional_timestamp(data: Mapping[str, Any], path: str, name: str) -> datetime | None:
    value = _get(data, path, name)
    return None if value is None else parse_timestamp(value, at(path, name))


def _rows(
    data: Mapping[str, Any], name: str, *, required: bool = True
) -> list[tuple[str, Mapping[str, Any]]]:
    if name not in data and not required:
        return []
    items = _array(_get(data, "", name), name)
    return [(f"{name}[{i}]", _object(item, f"{name}[{i}]")) for i, item in enumerate(items)]


def _unique(items: Sequence[Any], name: str, key: Any, describe: str) -> None:
    seen: dict[Any, int] = {}
    for i, item in enumerate(items):
        k = key(item)
        if k in seen:
            raise SnapshotError(f"duplicate of {name}[{seen[k]}] ({describe.format(*k)})", path=at(name, i))
        seen[k] = i


# --------------------------------------------------------------------------- trail rows


@dataclass(frozen=True)
class SourceRun:
    """One extraction run of a source.

    :param workspace_id: the workspace the run belongs to.
    :param source_id: the source that was extracted.
    :param status: ``ok``, ``failed`` or ``running``; only ``ok`` runs set expectations.
    :param started_at: when the run started (UTC).
    :param finished_at: when it finished, ``None`` while running.
    """

    workspace_id: str
    source_id: str
    status: RunStatus
    started_at: datetime
    finished_at: datetime | None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str = "source_run") -> SourceRun:
        """Parse one source run; raise :class:`SnapshotError` naming ``path`` on bad input."""
        data = _object(data, path)
        return cls(
            workspace_id=_text(data, path, "workspace_id"),
            source_id=_text(data, path, "source_id"),
            status=_choice(data, path, "status", _RUN_STATUSES),
            started_at=_timestamp(data, path, "started_at"),
            finished_at=_optional_timestamp(data, path, "finished_at"),
        )


@dataclass(frozen=True)
class BronzeTable:
    """A bronze table a source loads.

    :param workspace_id: the workspace the table belongs to.
    :param source_id: the source that loads it.
    :param table: the table name within the source.
    :param selected: whether the source is configured to load it; unselected tables are never expected.
    :param processed_at: when it was last loaded, ``None`` if never.
    """

    workspace_id: str
    source_id: str
    table: str
    selected: bool
    processed_at: datetime | None

    @property
    def key(self) -> str:
        """The table's name in findings and in transform inputs: ``source_id/table``."""
        return f"{self.source_id}/{self.table}"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str = "bronze_table") -> BronzeTable:
        """Parse one bronze table; raise :class:`SnapshotError` naming ``path`` on bad input."""
        data = _object(data, path)
        return cls(
            workspace_id=_text(data, path, "workspace_id"),
            source_id=_text(data, path, "source_id"),
            table=_text(data, path, "table"),
            selected=_flag(data, path, "selected"),
            processed_at=_optional_timestamp(data, path, "processed_at"),
        )


@dataclass(frozen=True)
class Transform:
    """A silver or gold transform.

    :param workspace_id: the workspace the transform belongs to.
    :param transform_id: its id, unique within the workspace.
    :param layer: ``silver`` (reads bronze tables) or ``gold`` (reads silver transforms).
    :param inputs: for silver, bronze tables as ``source_id/table`` or a bare ``table``; for gold,
        silver transform ids. Empty means every bronze table (silver) or every silver transform
        (gold) of the workspace.
    :param last_run_at: when it last ran, ``None`` if never.
    """

    workspace_id: str
    transform_id: str
    layer: TransformLayer
    inputs: tuple[str, ...]
    last_run_at: datetime | None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str = "transform") -> Transform:
        """Parse one transform; ``inputs`` may be ``null`` (same as ``[]``)."""
        data = _object(data, path)
        raw_inputs = _get(data, path, "inputs")
        inputs: list[str] = []
        if raw_inputs is not None:
            for i, item in enumerate(_array(raw_inputs, at(path, "inputs"))):
                if not isinstance(item, str) or not item:
                    raise SnapshotError(
                        f"{show(item)} is not a non-empty string", path=at(at(path, "inputs"), i)
                    )
                inputs.append(item)
        return cls(
            workspace_id=_text(data, path, "workspace_id"),
            transform_id=_text(data, path, "transform_id"),
            layer=_choice(data, path, "layer", _TRANSFORM_LAYERS),
            inputs=tuple(inputs),
            last_run_at=_optional_timestamp(data, path, "last_run_at"),
        )


@dataclass(frozen=True)
class Snapshot:
    """Everything the gap rules read: source runs, bronze tables and transforms of any workspaces.

    Bronze tables are unique by (workspace, source, table) and transforms by (workspace, transform).
    """

    source_runs: tuple[SourceRun, ...] = ()
    bronze_tables: tuple[BronzeTable, ...] = ()
    transforms: tuple[Transform, ...] = ()

    def __post_init__(self) -> None:
        _unique(
            self.bronze_tables,
            "bronze_tables",
            lambda t: (t.workspace_id, t.source_id, t.table),
            "workspace_id {0!r}, source_id {1!r}, table {2!r}",
        )
        _unique(
            self.transforms,
            "transforms",
            lambda t: (t.workspace_id, t.transform_id),
            "workspace_id {0!r}, transform_id {1!r}",
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Snapshot:
        """Parse ``{"source_runs": [...], "bronze_tables": [...], "transforms": [...]}`` (all required)."""
        data = _object(data, "")
        return cls(
            source_runs=tuple(SourceRun.from_dict(row, p) for p, row in _rows(data, "source_runs")),
            bronze_tables=tuple(BronzeTable.from_dict(row, p) for p, row in _rows(data, "bronze_tables")),
            transforms=tuple(Transform.from_dict(row, p) for p, row in _rows(data, "transforms")),
        )

    def workspace(self, workspace_id: str) -> Snapshot:
        """Only the rows of one workspace."""
        return Snapshot(
            source_runs=tuple(r for r in self.source_runs if r.workspace_id == workspace_id),
            bronze_tables=tuple(t for t in self.bronze_tables if t.workspace_id == workspace_id),
            transforms=tuple(t for t in self.transforms if t.workspace_id == workspace_id),
        )


@dataclass(frozen=True)
class ExtractionEvent:
    """One operation of a connector run (a page fetched, a table extracted, ...).

    :param workspace_id: the workspace.
    :param connector_id: the connector that ran it.
    :param run_id: the run it belongs to; runs are keyed by (workspace, connector, run_id).
    :param operation: free text naming the operation; not used by the health rules.
    :param started_at: when the operation started (UTC).
    :param duration_ms: how long it took, in whole milliseconds (at most ``MAX_DURATION_MS``).
    :param status: ``ok`` or ``error``; one ``error`` makes the whole run failed.
    """

    workspace_id: str
    connector_id: str
    run_id: str
    operation: str
    started_at: datetime
    duration_ms: int
    status: EventStatus

    @property
    def finished_at(self) -> datetime:
        """``started_at + duration_ms``."""
        return self.started_at + timedelta(milliseconds=self.duration_ms)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str = "event") -> ExtractionEvent:
        """Parse one event; raise :class:`SnapshotError` naming ``path`` on bad input."""
        data = _object(data, path)
        return cls(
            workspace_id=_text(data, path, "workspace_id"),
            connector_id=_text(data, path, "connector_id"),
            run_id=_text(data, path, "run_id"),
            operation=_text(data, path, "operation"),
            started_at=_timestamp(data, path, "started_at"),
            duration_ms=_count(data, path, "duration_ms", MAX_DURATION_MS),
            status=_choice(data, path, "status", _EVENT_STATUSES),
        )


@dataclass(frozen=True)
class EventLog:
    """The health input: extraction events plus the connectors expected to run.

    :param connectors: expected (workspace_id, connector_id) pairs; listed as ``stopped`` if silent.
    :param events: the extraction events.
    """

    connectors: tuple[tuple[str, str], ...] = ()
    events: tuple[ExtractionEvent, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EventLog:
        """Parse ``{"connectors": [{"workspace_id", "connector_id"}] (optional), "events": [...]}``."""
        data = _object(data, "")
        connectors = tuple(
            (_text(row, p, "workspace_id"), _text(row, p, "connector_id"))
            for p, row in _rows(data, "connectors", required=False)
        )
        events = tuple(ExtractionEvent.from_dict(row, p) for p, row in _rows(data, "events"))
        return cls(connectors=connectors, events=events)


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Finding:
    """A gap between layers that the operator should close.

    :param workspace_id: the workspace.
    :param layer: ``bronze``, ``silver`` or ``gold``: the layer of the subject.
    :param kind: ``missing`` (never produced) or ``stale`` (produced before ``expected_after``).
    :param subject: ``source_id/table`` for bronze, the transform id for silver and gold.
    :param expected_after: the time the subject should be at or after.
    :param observed_at: when the subject was last produced, ``None`` when missing.
    :param action: one sentence naming what to run.
    """

    workspace_id: str
    layer: Layer
    kind: FindingKind
    subject: str
    expected_after: datetime
    observed_at: datetime | None
    action: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict, timestamps in ISO 8601 UTC."""
        return {
            "workspace_id": self.workspace_id,
            "layer": self.layer,
            "kind": self.kind,
            "subject": self.subject,
            "expected_after": format_timestamp(self.expected_after),
            "observed_at": format_timestamp(self.observed_at),
            "action": self.action,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str = "finding") -> Finding:
        """Parse what :meth:`to_dict` wrote (e.g. a stored report)."""
        data = _object(data, path)
        return cls(
            workspace_id=_text(data, path, "workspace_id"),
            layer=_choice(data, path, "layer", LAYERS),
            kind=_choice(data, path, "kind", _KINDS),
            subject=_text(data, path, "subject"),
            expected_after=_timestamp(data, path, "expected_after"),
            observed_at=_optional_timestamp(data, path, "observed_at"),
            action=_text(data, path, "action"),
        )


@dataclass(frozen=True)
class ConnectorHealth:
    """One connector's health over a window ending at ``as_of``.

    :param workspace_id: the workspace.
    :param connector_id: the connector.
    :param runs: runs that finished in the window.
    :param failed_runs: those with at least one ``error`` event.
    :param error_rate: ``failed_runs / runs``; ``None`` when there were no runs.
    :param p50_ms: median run duration in ms (``percentile_cont`` interpolation); ``None`` without runs.
    :param p95_ms: 95th percentile run duration in ms; ``None`` without runs.
    :param last_run_at: latest finish of a run in the window; ``None`` without runs.
    :param freshness_seconds: ``as_of`` minus the latest finish of a successful run in the window;
        ``None`` if there is none.
    :param status: ``stopped``, ``failing``, ``degraded`` or ``healthy``.
    """

    workspace_id: str
    connector_id: str
    runs: int
    failed_runs: int
    error_rate: float | None
    p50_ms: float | None
    p95_ms: float | None
    last_run_at: datetime | None
    freshness_seconds: float | None
    status: HealthStatus

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict, timestamps in ISO 8601 UTC."""
        return {
            "workspace_id": self.workspace_id,
            "connector_id": self.connector_id,
            "runs": self.runs,
            "failed_runs": self.failed_runs,
            "error_rate": self.error_rate,
            "p50_ms": self.p50_ms,
            "p95_ms": self.p95_ms,
            "last_run_at": format_timestamp(self.last_run_at),
            "freshness_seconds": self.freshness_seconds,
            "status": self.status,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str = "connector") -> ConnectorHealth:
        """Parse what :meth:`to_dict` wrote (e.g. a stored report)."""
        data = _object(data, path)
        return cls(
            workspace_id=_text(data, path, "workspace_id"),
            connector_id=_text(data, path, "connector_id"),
            runs=_count(data, path, "runs"),
            failed_runs=_count(data, path, "failed_runs"),
            error_rate=_number(data, path, "error_rate", nullable=True),
            p50_ms=_number(data, path, "p50_ms", nullable=True),
            p95_ms=_number(data, path, "p95_ms", nullable=True),
            last_run_at=_optional_timestamp(data, path, "last_run_at"),
            freshness_seconds=_number(data, path, "freshness_seconds", nullable=True),
            status=_choice(data, path, "status", _HEALTH_STATUSES),
        )
