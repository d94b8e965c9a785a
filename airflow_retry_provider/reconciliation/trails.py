"""The trails in PostgreSQL: read one workspace into the models, and write trail rows.

Every function takes an open DB-API connection (psycopg 3 or psycopg2, e.g.
``RetryProviderHook().get_conn()``) and runs named statements of ``sql/queries.sql``; every statement
filters by workspace id. Writers validate their values with the models' ``from_dict`` (so a bad
status or a naive timestamp raises :class:`SnapshotError` before anything is written) and run in
the caller's transaction: **the caller commits**.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.reconciliation.health import (
    DEFAULT_WINDOW,
    DEGRADED_ERROR_RATE,
    FAILING_ERROR_RATE,
)
from airflow_retry_provider.reconciliation.models import (
    BronzeTable,
    ConnectorHealth,
    EventLog,
    ExtractionEvent,
    Snapshot,
    SourceRun,
    Transform,
    parse_timestamp,
)
from airflow_retry_provider.reconciliation.sql import query

__all__ = [
    "connector_health_sql",
    "fetch_all",
    "finish_source_run",
    "list_workspaces",
    "load_event_log",
    "load_snapshot",
    "load_snapshots",
    "record_bronze_table",
    "record_expected_connector",
    "record_extraction_event",
    "record_snapshot",
    "record_source_run",
    "record_transform",
]


def fetch_all(conn: Any, name: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Run the named statement and return its rows as dicts keyed by column name."""
    with conn.cursor() as cursor:
        cursor.execute(query(name), params)
        return ProviderDatabase.rows(cursor)


def _execute(conn: Any, name: str, params: Mapping[str, Any]) -> Any:
    with conn.cursor() as cursor:
        cursor.execute(query(name), params)
        return cursor.fetchone() if cursor.description is not None else None


# --------------------------------------------------------------------------- reading


def list_workspaces(conn: Any) -> list[str]:
    """Every workspace id that appears in a trail table, in code point order."""
    return [row["workspace_id"] for row in fetch_all(conn, "list_workspaces", {})]


def _ids(workspaces: str | Sequence[str]) -> list[str]:
    return [workspaces] if isinstance(workspaces, str) else list(workspaces)


def load_snapshots(conn: Any, workspace_ids: Sequence[str]) -> dict[str, Snapshot]:
    """The snapshot of each of the given workspaces (an empty one for a workspace without rows).

    Only the latest ``ok`` run per source is read, because it is the only run the gap rules use:
    ``find_gaps`` gives the same findings as over every run.
    """
    params = {"workspace_ids": _ids(workspace_ids)}
    runs: dict[str, list[SourceRun]] = {ws: [] for ws in params["workspace_ids"]}
    tables: dict[str, list[BronzeTable]] = {ws: [] for ws in runs}
    transforms: dict[str, list[Transform]] = {ws: [] for ws in runs}
    for i, row in enumerate(_rows(conn, "snapshot_source_runs", params)):
        runs[row[0]].append(_source_run(row, i))
    for i, row in enumerate(_rows(conn, "snapshot_bronze_tables", params)):
        tables[row[0]].append(_bronze_table(row, i))
    for i, row in enumerate(_rows(conn, "snapshot_transforms", params)):
        transforms[row[0]].append(_transform(row, i))
    return {ws: Snapshot(tuple(runs[ws]), tuple(tables[ws]), tuple(transforms[ws])) for ws in runs}


# Snapshot rows become models without a dict and ``from_dict`` per row: that was most of the time
# for 100,000 bronze tables. The columns' types and CHECK constraints guarantee what ``from_dict``
# checks, except non-empty ids and inputs; those are checked here, and a row that fails them goes
# through ``from_dict``, which raises the usual SnapshotError naming the field.
_SOURCE_RUN_COLUMNS = ("workspace_id", "source_id", "status", "started_at", "finished_at")
_BRONZE_TABLE_COLUMNS = ("workspace_id", "source_id", "table", "selected", "processed_at")
_TRANSFORM_COLUMNS = ("workspace_id", "transform_id", "layer", "inputs", "last_run_at")


def _source_run(row: tuple[Any, ...], i: int) -> SourceRun:
    ws, source_id, status, started_at, finished_at = row
    if not (ws and source_id):
        return SourceRun.from_dict(dict(zip(_SOURCE_RUN_COLUMNS, row, strict=True)), f"source_runs[{i}]")
    return SourceRun(ws, source_id, status, started_at.astimezone(timezone.utc), _utc(finished_at))


def _bronze_table(row: tuple[Any, ...], i: int) -> BronzeTable:
    ws, source_id, table, selected, processed_at = row
    if not (ws and source_id and table):
        return BronzeTable.from_dict(
            dict(zip(_BRONZE_TABLE_COLUMNS, row, strict=True)), f"bronze_tables[{i}]"
        )
    return BronzeTable(ws, source_id, table, selected, _utc(processed_at))


def _transform(row: tuple[Any, ...], i: int) -> Transform:
    ws, transform_id, layer, inputs, last_run_at = row
    if not (ws and transform_id and all(inputs)):
        return Transform.from_dict(dict(zip(_TRANSFORM_COLUMNS, row, strict=True)), f"transforms[{i}]")
    return Transform(ws, transform_id, layer, tuple(inputs), _utc(last_run_at))


def _utc(value: datetime | None) -> datetime | None:
    """A timestamptz value (always timezone-aware) in UTC, as ``parse_timestamp`` returns it."""
    return None if value is None else value.astimezone(timezone.utc)


def _rows(conn: Any, name: str, params: Mapping[str, Any]) -> list[Any]:
    """Run the named statement and return its rows as the driver gives them (tuples)."""
    with conn.cursor() as cursor:
        cursor.execute(query(name), params)
        return list(cursor.fetchall())


def load_snapshot(conn: Any, workspace_id: str) -> Snapshot:
    """One workspace's snapshot (see :func:`load_snapshots`)."""
    return load_snapshots(conn, [workspace_id])[workspace_id]


def load_event_log(conn: Any, workspaces: str | Sequence[str], as_of: datetime) -> EventLog:
    """The workspaces' expected connectors and every event finished by ``as_of``, as models.

    This is what computing health in Python needs (``connector_health(log.events, as_of,
    expected=log.connectors)``); the DAG uses :func:`connector_health_sql` instead.
    """
    params = {"workspace_ids": _ids(workspaces), "as_of": as_of}
    expected = tuple(
        (row["workspace_id"], row["connector_id"]) for row in fetch_all(conn, "expected_connectors", params)
    )
    events = tuple(
        ExtractionEvent.from_dict(row, f"events[{i}]")
        for i, row in enumerate(fetch_all(conn, "workspace_events", params))
    )
    return EventLog(connectors=expected, events=events)


def connector_health_sql(
    conn: Any, workspaces: str | Sequence[str], as_of: datetime, window: timedelta = DEFAULT_WINDOW
) -> list[ConnectorHealth]:
    """Connector health of one workspace (or several), computed in PostgreSQL.

    Returns exactly what ``health.connector_health`` returns for those workspaces' events and
    expected connectors: the same doubles, sorted by workspace and connector.

    :param conn: an open connection.
    :param workspaces: a workspace id, or a list of them.
    :param as_of: the end of the window (timezone-aware); later events are ignored.
    :param window: the window length, positive.
    """
    as_of = parse_timestamp(as_of, "as_of")
    if window <= timedelta(0):
        raise ValueError(f"window must be positive, got {window}")
    params = {
        "workspace_ids": sorted(set(_ids(workspaces))),
        "as_of": as_of,
        "window_start": as_of - window,  # in Python: exact, whatever the session's time zone
        "failing_num": FAILING_ERROR_RATE.numerator,
        "failing_den": FAILING_ERROR_RATE.denominator,
        "degraded_num": DEGRADED_ERROR_RATE.numerator,
        "degraded_den": DEGRADED_ERROR_RATE.denominator,
    }
    _execute(conn, "disable_jit", {})  # for this transaction: compiling costs more than running
    return [
        ConnectorHealth.from_dict(row, f"connector_health[{i}]")
        for i, row in enumerate(fetch_all(conn, "connector_health", params))
    ]


# --------------------------------------------------------------------------- writing


def record_source_run(
    conn: Any,
    *,
    workspace_id: str,
    source_id: str,
    status: str,
    started_at: datetime,
    finished_at: datetime | None = None,
) -> int:
    """Insert one source run (``ok``, ``failed`` or ``running``) and return its id.

    Record a run as ``running`` when it starts and call :func:`finish_source_run` when it ends,
    or record it once, finished.
    """
    run = SourceRun.from_dict(
        {
            "workspace_id": workspace_id,
            "source_id": source_id,
            "status": status,
            "started_at": started_at,
            "finished_at": finished_at,
        }
    )
    row = _execute(conn, "insert_source_run", vars(run))
    return int(row[0])


def finish_source_run(
    conn: Any, *, workspace_id: str, run_id: int, status: str, finished_at: datetime
) -> bool:
    """Set a recorded run's final status and finish time; return whether the run exists."""
    if status not in ("ok", "failed"):
        raise ValueError(f"status {status!r} is not 'ok' or 'failed'")
    params = {
        "workspace_id": workspace_id,
        "id": run_id,
        "status": status,
        "finished_at": parse_timestamp(finished_at, "finished_at"),
    }
    return _execute(conn, "finish_source_run", params) is not None


def record_bronze_table(
    conn: Any,
    *,
    workspace_id: str,
    source_id: str,
    table: str,
    selected: bool = True,
    processed_at: datetime | None = None,
) -> None:
    """Register a bronze table, or mark it loaded at ``processed_at``.

    ``processed_at`` only moves forward: registering a table again (``None``) or reporting an
    older load never forgets a newer one. ``selected`` always takes the new value.
    """
    table_row = BronzeTable.from_dict(
        {
            "workspace_id": workspace_id,
            "source_id": source_id,
            "table": table,
            "selected": selected,
            "processed_at": processed_at,
        }
    )
    _execute(conn, "upsert_bronze_table", vars(table_row))


def record_transform(
    conn: Any,
    *,
    workspace_id: str,
    transform_id: str,
    layer: str,
    inputs: Sequence[str] = (),
    last_run_at: datetime | None = None,
) -> None:
    """Register a silver or gold transform, or mark it run at ``last_run_at``.

    ``layer`` and ``inputs`` take the new values; ``last_run_at`` only moves forward.
    """
    transform = Transform.from_dict(
        {
            "workspace_id": workspace_id,
            "transform_id": transform_id,
            "layer": layer,
            "inputs": list(inputs),
            "last_run_at": last_run_at,
        }
    )
    params = {**vars(transform), "inputs": list(transform.inputs)}
    _execute(conn, "upsert_transform", params)


def record_extraction_event(
    conn: Any,
    *,
    workspace_id: str,
    connector_id: str,
    run_id: str,
    operation: str,
    started_at: datetime,
    duration_ms: int,
    status: str,
) -> None:
    """Insert one extraction event (``ok`` or ``error``) of a connector run."""
    event = ExtractionEvent.from_dict(
        {
            "workspace_id": workspace_id,
            "connector_id": connector_id,
            "run_id": run_id,
            "operation": operation,
            "started_at": started_at,
            "duration_ms": duration_ms,
            "status": status,
        }
    )
    _execute(conn, "insert_extraction_event", vars(event))


def record_expected_connector(conn: Any, *, workspace_id: str, connector_id: str) -> None:
    """Declare a connector that should be running (listed as ``stopped`` when it is silent)."""
    if not workspace_id or not connector_id:
        raise ValueError("workspace_id and connector_id must be non-empty")
    _execute(conn, "upsert_expected_connector", {"workspace_id": workspace_id, "connector_id": connector_id})


def record_snapshot(conn: Any, snapshot: Snapshot, events: Iterable[ExtractionEvent] = ()) -> None:
    """Write every row of a snapshot and events (tests, demos, imports from ``reconcile`` JSON)."""
    for run in snapshot.source_runs:
        record_source_run(conn, **vars(run))
    for table in snapshot.bronze_tables:
        record_bronze_table(conn, **vars(table))
    for transform in snapshot.transforms:
        record_transform(conn, **vars(transform))
    for event in events:
        record_extraction_event(conn, **vars(event))
