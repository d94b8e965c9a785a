"""Frozen values for medallion reconciliation, parsed from JSON or from database rows.

Every ``from_dict`` accepts a mapping (a JSON object or a dict row from PostgreSQL), validates it
with pydantic against the dataclass's field types (declared once, below) and raises
:class:`SnapshotError` naming the field path and the bad value, e.g.
``bronze_tables[3].processed_at: 'yesterday' is not an ISO 8601 timestamp with offset``.
Timestamps may be ISO 8601 strings with an offset or timezone-aware ``datetime`` objects;
both are normalised to UTC. Unknown keys are ignored so rows may carry extra columns.

No I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime, timedelta, timezone
from functools import cache
from typing import Annotated, Any, ClassVar, Literal, Self, get_args

from annotated_types import MinLen
from pydantic import BeforeValidator, PlainValidator, Strict, TypeAdapter, ValidationError
from pydantic_core import PydanticCustomError

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
LAYERS: tuple[Layer, ...] = get_args(Layer)

#: The largest ``duration_ms`` accepted: PostgreSQL's ``integer`` maximum.
MAX_DURATION_MS = 2**31 - 1


class SnapshotError(FieldError):
    """Input that does not describe a valid snapshot; the message names the field path and the value."""


# --------------------------------------------------------------------------- field types


def _problem(message: str) -> PydanticCustomError:
    return PydanticCustomError("snapshot", "{problem}", {"problem": message})


def _utc(value: object) -> datetime:
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
        raise _problem(f"{show(value)} is not an ISO 8601 timestamp with offset")
    try:
        return parsed.astimezone(timezone.utc)
    except OverflowError:
        raise _problem(f"{show(value)} is out of range in UTC") from None


def parse_timestamp(value: object, path: str) -> datetime:
    """Parse an ISO 8601 timestamp with an offset (or an aware ``datetime``) into UTC.

    :param value: the raw value, a string such as ``2026-11-30T10:00:00-03:00`` or a datetime.
    :param path: the field path named in the error, e.g. ``bronze_tables[3].processed_at``.
    :raises SnapshotError: when the value is not a timestamp or has no offset.
    """
    try:
        parsed: datetime = _adapter(Timestamp).validate_python(value)
    except ValidationError as exc:
        raise SnapshotError(exc.errors(include_url=False)[0]["msg"], path=path) from None
    return parsed


def format_timestamp(value: datetime | None) -> str | None:
    """Render a timestamp as ISO 8601 in UTC (``2026-11-30T10:00:00+00:00``); ``None`` stays ``None``."""
    return None if value is None else value.astimezone(timezone.utc).isoformat()


def _count(maximum: int | None = None) -> PlainValidator:
    def check(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise _problem(f"{show(value)} is not a non-negative integer")
        if maximum is not None and value > maximum:
            raise _problem(f"{show(value)} is larger than {maximum}")
        return value

    return PlainValidator(check)


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise _problem(f"{show(value)} is not a number")
    return float(value)


def _one_of(choices: Any) -> PlainValidator:
    allowed = get_args(choices)

    def check(value: object) -> Any:
        if not isinstance(value, str) or value not in allowed:
            raise _problem(f"{show(value)} is not one of {', '.join(repr(c) for c in allowed)}")
        return value

    return PlainValidator(check)


Text = Annotated[str, Strict(), MinLen(1)]
Flag = Annotated[bool, Strict()]
Timestamp = Annotated[datetime, PlainValidator(_utc)]
Count = Annotated[int, _count()]
Number = Annotated[float, PlainValidator(_number)]
Inputs = Annotated[tuple[Text, ...], BeforeValidator(lambda value: () if value is None else value)]

# pydantic's own complaints, in the words the rest of the package uses
_MESSAGES = {
    "missing": "missing field",
    "dataclass_type": "expected an object, got {value}",
    "dict_type": "expected an object, got {value}",
    "tuple_type": "expected an array, got {value}",
    "list_type": "expected an array, got {value}",
    "string_type": "{value} is not a non-empty string",
    "string_too_short": "{value} is not a non-empty string",
    "bool_type": "{value} is not true or false",
}


@cache
def _adapter(kind: Any) -> TypeAdapter[Any]:
    return TypeAdapter(kind)


def _parse(kind: Any, value: object, path: str) -> Any:
    """``value`` validated as ``kind``; the first problem is a :class:`SnapshotError` naming its path and value."""
    try:
        return _adapter(kind).validate_python(value)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = path
        for key in error["loc"]:
            where = at(where, key)
        template = _MESSAGES.get(error["type"])
        problem = error["msg"] if template is None else template.format(value=show(error["input"]))
        raise SnapshotError(problem, path=where or "input") from None


def _object(value: object, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SnapshotError(f"expected an object, got {show(value)}", path=path or "input")
    return value


def _field(data: Mapping[str, Any], name: str) -> Any:
    if name not in data:
        raise SnapshotError("missing field", path=name)
    return data[name]


def _unique(items: tuple[Any, ...], name: str, key: Any, describe: str) -> None:
    seen: dict[Any, int] = {}
    for i, item in enumerate(items):
        k = key(item)
        if k in seen:
            raise SnapshotError(f"duplicate of {name}[{seen[k]}] ({describe.format(*k)})", path=at(name, i))
        seen[k] = i


class _FromDict:
    """``from_dict`` for a dataclass whose field types say how each field is validated.

    A subclass names its rows in errors: ``class SourceRun(_FromDict, where="source_run")``.
    """

    where: ClassVar[str]

    def __init_subclass__(cls, where: str, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.where = where

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str | None = None) -> Self:
        """Parse one row; raise :class:`SnapshotError` naming ``path`` (default: the row's name) on bad input."""
        parsed: Self = _parse(cls, data, cls.where if path is None else path)
        return parsed

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of the fields in order, timestamps in ISO 8601 UTC (what ``from_dict`` reads)."""
        values = {field.name: getattr(self, field.name) for field in fields(self)}  # type: ignore[arg-type]
        return {name: format_timestamp(v) if isinstance(v, datetime) else v for name, v in values.items()}


# --------------------------------------------------------------------------- trail rows


@dataclass(frozen=True)
class SourceRun(_FromDict, where="source_run"):
    """One extraction run of a source.

    :param workspace_id: the workspace the run belongs to.
    :param source_id: the source that was extracted.
    :param status: ``ok``, ``failed`` or ``running``; only ``ok`` runs set expectations.
    :param started_at: when the run started (UTC).
    :param finished_at: when it finished, ``None`` while running.
    """

    workspace_id: Text
    source_id: Text
    status: Annotated[RunStatus, _one_of(RunStatus)]
    started_at: Timestamp
    finished_at: Timestamp | None


@dataclass(frozen=True)
class BronzeTable(_FromDict, where="bronze_table"):
    """A bronze table a source loads.

    :param workspace_id: the workspace the table belongs to.
    :param source_id: the source that loads it.
    :param table: the table name within the source.
    :param selected: whether the source is configured to load it; unselected tables are never expected.
    :param processed_at: when it was last loaded, ``None`` if never.
    """

    workspace_id: Text
    source_id: Text
    table: Text
    selected: Flag
    processed_at: Timestamp | None

    @property
    def key(self) -> str:
        """The table's name in findings and in transform inputs: ``source_id/table``."""
        return f"{self.source_id}/{self.table}"


@dataclass(frozen=True)
class Transform(_FromDict, where="transform"):
    """A silver or gold transform.

    :param workspace_id: the workspace the transform belongs to.
    :param transform_id: its id, unique within the workspace.
    :param layer: ``silver`` (reads bronze tables) or ``gold`` (reads silver transforms).
    :param inputs: for silver, bronze tables as ``source_id/table`` or a bare ``table``; for gold,
        silver transform ids. Empty means every bronze table (silver) or every silver transform
        (gold) of the workspace.
    :param last_run_at: when it last ran, ``None`` if never.
    """

    workspace_id: Text
    transform_id: Text
    layer: Annotated[TransformLayer, _one_of(TransformLayer)]
    inputs: Inputs
    last_run_at: Timestamp | None


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
            source_runs=_parse(tuple[SourceRun, ...], _field(data, "source_runs"), "source_runs"),
            bronze_tables=_parse(tuple[BronzeTable, ...], _field(data, "bronze_tables"), "bronze_tables"),
            transforms=_parse(tuple[Transform, ...], _field(data, "transforms"), "transforms"),
        )

    def workspace(self, workspace_id: str) -> Snapshot:
        """Only the rows of one workspace."""
        return Snapshot(
            source_runs=tuple(r for r in self.source_runs if r.workspace_id == workspace_id),
            bronze_tables=tuple(t for t in self.bronze_tables if t.workspace_id == workspace_id),
            transforms=tuple(t for t in self.transforms if t.workspace_id == workspace_id),
        )


@dataclass(frozen=True)
class ExtractionEvent(_FromDict, where="event"):
    """One operation of a connector run (a page fetched, a table extracted, ...).

    :param workspace_id: the workspace.
    :param connector_id: the connector that ran it.
    :param run_id: the run it belongs to; runs are keyed by (workspace, connector, run_id).
    :param operation: free text naming the operation; not used by the health rules.
    :param started_at: when the operation started (UTC).
    :param duration_ms: how long it took, in whole milliseconds (at most ``MAX_DURATION_MS``).
    :param status: ``ok`` or ``error``; one ``error`` makes the whole run failed.
    """

    workspace_id: Text
    connector_id: Text
    run_id: Text
    operation: Text
    started_at: Timestamp
    duration_ms: Annotated[int, _count(MAX_DURATION_MS)]
    status: Annotated[EventStatus, _one_of(EventStatus)]

    @property
    def finished_at(self) -> datetime:
        """``started_at + duration_ms``."""
        return self.started_at + timedelta(milliseconds=self.duration_ms)


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
        connectors: tuple[_Connector, ...] = _parse(
            tuple[_Connector, ...], data.get("connectors", ()), "connectors"
        )
        return cls(
            connectors=tuple((c.workspace_id, c.connector_id) for c in connectors),
            events=_parse(tuple[ExtractionEvent, ...], _field(data, "events"), "events"),
        )


@dataclass(frozen=True)
class _Connector:
    """A connector expected to run, as :meth:`EventLog.from_dict` reads it."""

    workspace_id: Text
    connector_id: Text


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Finding(_FromDict, where="finding"):
    """A gap between layers that the operator should close.

    :param workspace_id: the workspace.
    :param layer: ``bronze``, ``silver`` or ``gold``: the layer of the subject.
    :param kind: ``missing`` (never produced) or ``stale`` (produced before ``expected_after``).
    :param subject: ``source_id/table`` for bronze, the transform id for silver and gold.
    :param expected_after: the time the subject should be at or after.
    :param observed_at: when the subject was last produced, ``None`` when missing.
    :param action: one sentence naming what to run.
    """

    workspace_id: Text
    layer: Annotated[Layer, _one_of(Layer)]
    kind: Annotated[FindingKind, _one_of(FindingKind)]
    subject: Text
    expected_after: Timestamp
    observed_at: Timestamp | None
    action: Text


@dataclass(frozen=True)
class ConnectorHealth(_FromDict, where="connector"):
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

    workspace_id: Text
    connector_id: Text
    runs: Count
    failed_runs: Count
    error_rate: Number | None
    p50_ms: Number | None
    p95_ms: Number | None
    last_run_at: Timestamp | None
    freshness_seconds: Number | None
    status: Annotated[HealthStatus, _one_of(HealthStatus)]
