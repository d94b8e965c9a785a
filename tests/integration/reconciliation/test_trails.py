"""Reconciliation in PostgreSQL: trail tables, SQL health equal to Python's, isolation, stored reports."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_retry_provider.reconciliation import (
    BronzeTable,
    ExtractionEvent,
    Finding,
    Snapshot,
    SnapshotError,
    SourceRun,
    Transform,
    connector_health,
    find_gaps,
    trails,
)
from airflow_retry_provider.reconciliation import report as rep
from airflow_retry_provider.reconciliation.models import MAX_DURATION_MS
from airflow_retry_provider.reconciliation.schema import (
    TRAIL_TABLES,
    apply_trail_schema,
    ensure_trail_schema,
    missing_trail_tables,
)
from airflow_retry_provider.reconciliation.sql import queries

UTC = timezone.utc
AS_OF = datetime(2026, 11, 30, 15, 0, tzinfo=UTC)
DAY = timedelta(hours=24)


@pytest.fixture
def conn(pg_dsn) -> Iterator[psycopg.Connection]:
    """A connection to a fresh provider database that has the trail tables."""
    with psycopg.connect(pg_dsn) as connection:
        apply_trail_schema(connection)
        yield connection


def _clear(conn: psycopg.Connection) -> None:
    conn.execute("TRUNCATE " + ", ".join(TRAIL_TABLES))  # noqa: S608 - fixed table names
    conn.commit()


def _event(
    ws: str, connector: str, run: str, start: datetime, ms: int, status: str = "ok"
) -> ExtractionEvent:
    return ExtractionEvent(ws, connector, run, "fetch", start, ms, status)  # type: ignore[arg-type]


def _record_events(conn: psycopg.Connection, events: list[ExtractionEvent]) -> None:
    for event in events:
        trails.record_extraction_event(conn, **vars(event))
    conn.commit()


def _python_health(conn, ws: str, as_of: datetime, window: timedelta = DAY):
    log = trails.load_event_log(conn, ws, as_of)
    return connector_health(log.events, as_of, window, expected=log.connectors)


# --------------------------------------------------------------------------- schema


def test_trail_schema_is_idempotent_and_complete(conn):
    """The schema upgrade runs twice without error and creates every trail and report table."""
    apply_trail_schema(conn)
    assert missing_trail_tables(conn) == []
    assert ensure_trail_schema(conn) is False


def test_ensure_trail_schema_creates_missing_tables(pg_server):
    """On a database without the tables, ensure_trail_schema creates them (and says so)."""
    dsn = pg_server.create_database("arp_trails_ensure")
    try:
        with psycopg.connect(dsn) as connection:
            assert set(missing_trail_tables(connection)) == set(TRAIL_TABLES)
            assert ensure_trail_schema(connection) is True
            assert missing_trail_tables(connection) == []
    finally:
        pg_server.drop_database("arp_trails_ensure")


# --------------------------------------------------------------------------- health: SQL == Python


def test_sql_health_equals_python_on_a_known_case(conn):
    """Failed runs, a run spanning the window start, a late event, a silent and an expected connector."""
    start = AS_OF - timedelta(hours=3)
    events = [
        _event("w1", "crm", "r1", start, 1000),
        _event("w1", "crm", "r1", start + timedelta(seconds=2), 1500),  # run r1: 3.5 s
        _event("w1", "crm", "r2", start + timedelta(hours=1), 2000, "error"),
        _event("w1", "crm", "r3", AS_OF - DAY - timedelta(minutes=1), 120_000),  # spans the window start
        _event("w1", "crm", "r4", AS_OF - timedelta(seconds=1), 5000),  # finishes after as_of: ignored
        _event("w1", "old", "o1", AS_OF - timedelta(days=3), 10),  # seen, but not in the window
        _event("w1", "edge", "e1", AS_OF - DAY - timedelta(seconds=1), 1000),  # finishes at window start
        _event("w1", "edge", "e2", AS_OF - timedelta(seconds=1), 1000),  # finishes exactly at as_of
    ]
    _record_events(conn, events)
    trails.record_expected_connector(conn, workspace_id="w1", connector_id="idle")
    conn.commit()
    sql = trails.connector_health_sql(conn, "w1", AS_OF)
    assert sql == connector_health(events, AS_OF, DAY, expected=[("w1", "idle")])
    by_id = {h.connector_id: h for h in sql}
    assert [h.connector_id for h in sql] == ["crm", "edge", "idle", "old"]
    assert (by_id["crm"].runs, by_id["crm"].failed_runs, by_id["crm"].status) == (3, 1, "degraded")
    assert (by_id["edge"].runs, by_id["edge"].freshness_seconds) == (1, 0.0)
    assert by_id["idle"].status == by_id["old"].status == "stopped"


def test_sql_health_reads_whole_runs_across_the_window_start_and_as_of(conn):
    """A run's events before the window count, events finished after as_of do not exist."""
    window_start = AS_OF - DAY
    events = [
        # s1 straddles the window start: it lasts from its first start, and its early error fails it
        _event("w1", "span", "s1", window_start - timedelta(minutes=10), 1000, "error"),
        _event("w1", "span", "s1", AS_OF - timedelta(hours=1), 2000),
        # s2's second event finishes after as_of: ignored, with its error
        _event("w1", "span", "s2", AS_OF - timedelta(minutes=30), 1000),
        _event("w1", "span", "s2", AS_OF - timedelta(seconds=1), 5000, "error"),
        # only an event finishing after as_of: the connector does not exist yet
        _event("w1", "late", "l1", AS_OF - timedelta(seconds=1), 5000),
        # p1 finished before the window; its event after as_of does not bring it into the window
        _event("w1", "prior", "p1", window_start - timedelta(hours=2), 1000),
        _event("w1", "prior", "p1", AS_OF + timedelta(minutes=1), 10),
    ]
    _record_events(conn, events)
    trails.record_expected_connector(conn, workspace_id="w1", connector_id="span")  # expected and seen
    conn.commit()
    sql = trails.connector_health_sql(conn, ["w1"], AS_OF)
    assert sql == connector_health(events, AS_OF, DAY, expected=[("w1", "span")])
    assert [(h.connector_id, h.runs, h.failed_runs, h.status) for h in sql] == [
        ("prior", 0, 0, "stopped"),
        ("span", 2, 1, "failing"),
    ]
    span = sql[1]
    s1_ms = (23 * 3600 + 10 * 60 + 2) * 1000  # from 10 min before the window start to 2 s after 14:00
    assert (span.p50_ms, span.p95_ms) == (1000 + 0.5 * (s1_ms - 1000), 1000 + 0.95 * (s1_ms - 1000))
    s2_finish = AS_OF - timedelta(minutes=30) + timedelta(seconds=1)
    assert (span.last_run_at, span.freshness_seconds) == (s2_finish, 30 * 60 - 1)


_MINUTE_MS = 60_000


@st.composite
def _event_sets(draw: st.DrawFn) -> list[ExtractionEvent]:
    events = []
    for i in range(draw(st.integers(0, 40))):
        offset_us = draw(
            st.one_of(
                st.integers(-3 * 24 * 60 * _MINUTE_MS, 60 * _MINUTE_MS).map(lambda ms: ms * 1000),
                st.integers(-3 * 24 * 3_600_000_000, 3_600_000_000),  # microsecond starts
                st.sampled_from([-DAY // timedelta(microseconds=1), 0]),  # the window's two ends
            )
        )
        duration = draw(
            st.one_of(
                st.integers(0, 10 * _MINUTE_MS),
                st.sampled_from([0, 1, MAX_DURATION_MS]),  # the largest duration a row may hold
            )
        )
        events.append(
            _event(
                draw(st.sampled_from(["w1", "w2", "w3"])),
                draw(st.sampled_from(["api", "db", "ftp"])),
                draw(st.sampled_from(["r1", "r2", "r3", f"r{i}"])),
                AS_OF
                + timedelta(microseconds=offset_us)
                - timedelta(milliseconds=duration if offset_us == 0 else 0),
                duration,
                draw(st.sampled_from(["ok", "ok", "ok", "error"])),
            )
        )
    return events


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    events=_event_sets(),
    expected=st.lists(
        st.tuples(st.sampled_from(["w1", "w2"]), st.sampled_from(["api", "idle"])), unique=True
    ),
    window_minutes=st.sampled_from([1, 90, 24 * 60, 49 * 60]),
)
def test_sql_health_equals_python_on_random_events(conn, events, expected, window_minutes):
    """For random events of three workspaces, SQL health equals Python's, per workspace and in one batch."""
    _clear(conn)
    _record_events(conn, events)
    for ws, connector in expected:
        trails.record_expected_connector(conn, workspace_id=ws, connector_id=connector)
    conn.commit()
    window = timedelta(minutes=window_minutes)
    for ws in ("w1", "w2", "w3"):
        python = connector_health(
            [e for e in events if e.workspace_id == ws],
            AS_OF,
            window,
            expected=[pair for pair in expected if pair[0] == ws],
        )
        assert trails.connector_health_sql(conn, ws, AS_OF, window) == python
        assert _python_health(conn, ws, AS_OF, window) == python
    everyone = connector_health(events, AS_OF, window, expected=expected)
    assert trails.connector_health_sql(conn, ["w3", "w1", "w2"], AS_OF, window) == everyone


def test_sql_health_ignores_the_session_time_zone(conn):
    """A window across a DST change in the session's time zone is still exactly 24 hours."""
    as_of = datetime(2018, 11, 5, 3, 0, tzinfo=UTC)  # Brazil's DST began on 2018-11-04
    events = [_event("w1", "api", "r1", as_of - DAY + timedelta(seconds=30), 1000)]
    _record_events(conn, events)
    conn.execute("SET TIME ZONE 'America/Sao_Paulo'")
    assert trails.connector_health_sql(conn, "w1", as_of) == connector_health(events, as_of)


# --------------------------------------------------------------------------- snapshot and writers


def _seed_workspace(conn, ws: str, shift: timedelta = timedelta(0)) -> None:
    """Sources, tables and transforms with every kind of finding; ``shift`` moves every time."""
    t0 = AS_OF - timedelta(hours=6) + shift
    trails.record_source_run(
        conn, workspace_id=ws, source_id="crm", status="ok", started_at=t0 - DAY, finished_at=t0 - DAY
    )
    trails.record_source_run(
        conn,
        workspace_id=ws,
        source_id="crm",
        status="ok",
        started_at=t0,
        finished_at=t0 + timedelta(minutes=5),
    )
    trails.record_source_run(
        conn, workspace_id=ws, source_id="crm", status="failed", started_at=t0 + timedelta(hours=1)
    )
    trails.record_source_run(conn, workspace_id=ws, source_id="erp", status="running", started_at=t0)
    trails.record_bronze_table(conn, workspace_id=ws, source_id="crm", table="orders")  # missing
    trails.record_bronze_table(
        conn, workspace_id=ws, source_id="crm", table="customers", processed_at=t0 - timedelta(hours=1)
    )  # stale
    trails.record_bronze_table(
        conn, workspace_id=ws, source_id="crm", table="leads", processed_at=t0
    )  # fresh
    trails.record_bronze_table(conn, workspace_id=ws, source_id="crm", table="audit", selected=False)
    trails.record_bronze_table(conn, workspace_id=ws, source_id="erp", table="invoices")  # no ok run
    trails.record_transform(
        conn, workspace_id=ws, transform_id="stg_leads", layer="silver", inputs=["crm/leads"]
    )
    trails.record_transform(
        conn,
        workspace_id=ws,
        transform_id="stg_customers",
        layer="silver",
        inputs=["customers"],
        last_run_at=t0 - timedelta(hours=2),
    )
    trails.record_transform(
        conn,
        workspace_id=ws,
        transform_id="mart",
        layer="gold",
        inputs=[],
        last_run_at=t0 - timedelta(hours=3),
    )
    trails.record_expected_connector(conn, workspace_id=ws, connector_id="crm_api")
    trails.record_extraction_event(
        conn,
        workspace_id=ws,
        connector_id="crm_api",
        run_id="run-1",
        operation="fetch",
        started_at=t0,
        duration_ms=1500,
        status="ok",
    )
    conn.commit()


EXPECTED_W1 = [
    ("bronze", "missing", "crm/orders"),
    ("bronze", "stale", "crm/customers"),
    ("silver", "stale", "stg_customers"),
    ("silver", "missing", "stg_leads"),
    ("gold", "stale", "mart"),
]


def test_snapshot_from_sql_gives_the_findings_of_the_full_snapshot(conn):
    """load_snapshot reads only the latest ok run per source, and find_gaps gives the expected findings."""
    _seed_workspace(conn, "w1")
    snapshot = trails.load_snapshot(conn, "w1")
    assert [(r.source_id, r.status) for r in snapshot.source_runs] == [("crm", "ok")]
    assert len(snapshot.bronze_tables) == 5 and len(snapshot.transforms) == 3
    findings = find_gaps(snapshot)
    assert sorted((f.layer, f.kind, f.subject) for f in findings) == sorted(EXPECTED_W1)
    assert [f.subject for f in findings] == [
        "crm/customers",
        "crm/orders",
        "stg_customers",
        "stg_leads",
        "mart",
    ]


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        (
            "INSERT INTO bronze_tables (workspace_id, source_id, table_name) VALUES ('w1', 's', '')",
            r"bronze_tables\[0\]\.table: '' is not a non-empty string",
        ),
        (
            "INSERT INTO source_runs (workspace_id, source_id, status, started_at) VALUES ('w1', '', 'ok', now())",
            r"source_runs\[0\]\.source_id: '' is not a non-empty string",
        ),
        (
            "INSERT INTO transforms (workspace_id, transform_id, layer, inputs) VALUES ('w1', 'x', 'silver', '{a,NULL}')",
            r"transforms\[0\]\.inputs\[1\]: None is not a non-empty string",
        ),
    ],
)
def test_load_snapshot_refuses_rows_the_models_refuse(conn, statement, message):
    """Rows written around the writers (an empty id, a null input) raise SnapshotError as from_dict does."""
    conn.execute(statement)
    conn.commit()
    with pytest.raises(SnapshotError, match=message):
        trails.load_snapshot(conn, "w1")


def test_writers_keep_processed_times_moving_forward(conn):
    """Registering a table or transform again never forgets a newer load or run; layer and inputs update."""
    t = AS_OF - timedelta(hours=1)
    trails.record_bronze_table(conn, workspace_id="w1", source_id="s", table="t", processed_at=t)
    trails.record_bronze_table(conn, workspace_id="w1", source_id="s", table="t", selected=False)
    trails.record_bronze_table(
        conn, workspace_id="w1", source_id="s", table="t", selected=False, processed_at=t - DAY
    )
    trails.record_transform(conn, workspace_id="w1", transform_id="x", layer="silver", last_run_at=t)
    trails.record_transform(conn, workspace_id="w1", transform_id="x", layer="gold", inputs=["y"])
    conn.commit()
    snapshot = trails.load_snapshot(conn, "w1")
    assert snapshot.bronze_tables == (BronzeTable("w1", "s", "t", False, t),)
    assert snapshot.transforms == (Transform("w1", "x", "gold", ("y",), t),)


def test_finish_source_run_sets_the_final_status(conn):
    """A run recorded as running and then finished ok becomes the source's latest ok run."""
    t = AS_OF - timedelta(hours=1)
    run_id = trails.record_source_run(conn, workspace_id="w1", source_id="s", status="running", started_at=t)
    assert trails.load_snapshot(conn, "w1").source_runs == ()
    assert trails.finish_source_run(conn, workspace_id="w1", run_id=run_id, status="ok", finished_at=AS_OF)
    assert not trails.finish_source_run(
        conn, workspace_id="w2", run_id=run_id, status="ok", finished_at=AS_OF
    )
    assert trails.load_snapshot(conn, "w1").source_runs == (SourceRun("w1", "s", "ok", t, AS_OF),)


@pytest.mark.parametrize(
    ("writer", "fields", "message"),
    [
        # an unknown status is refused before anything is written
        (trails.record_source_run, {"source_id": "s", "status": "done", "started_at": AS_OF}, "status"),
        # a naive timestamp has no offset: refused
        (
            trails.record_bronze_table,
            {"source_id": "s", "table": "t", "processed_at": datetime(2026, 1, 1)},
            "processed_at",
        ),
        # a layer that is neither silver nor gold
        (trails.record_transform, {"transform_id": "x", "layer": "platinum"}, "layer"),
        # a negative duration
        (
            trails.record_extraction_event,
            {
                "connector_id": "c",
                "run_id": "r",
                "operation": "o",
                "started_at": AS_OF,
                "duration_ms": -1,
                "status": "ok",
            },
            "duration_ms",
        ),
    ],
)
def test_writers_refuse_bad_values(conn, writer, fields, message):
    """Writers validate with the models and raise SnapshotError naming the field."""
    with pytest.raises(SnapshotError, match=message):
        writer(conn, workspace_id="w1", **fields)


def test_list_workspaces_reads_every_trail_table(conn):
    """A workspace appears in the list whichever trail table holds its only row."""
    trails.record_source_run(conn, workspace_id="a", source_id="s", status="ok", started_at=AS_OF)
    trails.record_bronze_table(conn, workspace_id="b", source_id="s", table="t")
    trails.record_transform(conn, workspace_id="c", transform_id="x", layer="silver")
    trails.record_extraction_event(
        conn,
        workspace_id="d",
        connector_id="c",
        run_id="r",
        operation="o",
        started_at=AS_OF,
        duration_ms=1,
        status="ok",
    )
    trails.record_expected_connector(conn, workspace_id="e", connector_id="c")
    trails.record_bronze_table(conn, workspace_id="B", source_id="s", table="t")
    conn.commit()
    assert trails.list_workspaces(conn) == ["B", "a", "b", "c", "d", "e"]


# --------------------------------------------------------------------------- workspace isolation

# Parameters for every statement that reads; a statement added to queries.sql without a row here
# fails test_every_read_query_is_covered.
_READS: dict[str, dict[str, Any]] = {
    "snapshot_source_runs": {},
    "snapshot_bronze_tables": {},
    "snapshot_transforms": {},
    "workspace_events": {"as_of": AS_OF},
    "expected_connectors": {},
    "connector_health": {
        "as_of": AS_OF,
        "window_start": AS_OF - DAY,
        "failing_num": 1,
        "failing_den": 2,
        "degraded_num": 1,
        "degraded_den": 10,
    },
    "previous_findings": {"as_of": AS_OF + timedelta(hours=1)},
    "latest_report": {},
    "latest_reports": {},
    "report_history": {"limit": 10},
    "report_findings": {"report_id": None},  # filled with w1's report id
    "workspace_report": {"report_id": None},  # filled with w1's report id
}
# ids (of all workspaces, for a selector), the catalogue, a setting
_NOT_PER_WORKSPACE = {"list_workspaces", "report_workspaces", "missing_trail_tables", "disable_jit"}
_WRITES = re.compile(r"^\s*(INSERT|UPDATE|DELETE)\b", re.IGNORECASE)


def test_every_read_query_is_covered():
    """Every reading statement has an isolation case; every read, update and delete filters by workspace."""
    reads = {name for name, sql in queries().items() if not _WRITES.search(_strip_comments(sql))}
    assert reads - _NOT_PER_WORKSPACE == set(_READS)
    for name, sql in queries().items():
        if name not in _NOT_PER_WORKSPACE and not _strip_comments(sql).lstrip().upper().startswith("INSERT"):
            assert re.search(
                r"workspace_id = %\(workspace_id\)s|unnest\(%\(workspace_ids\)s|ANY\(%\(workspace_ids\)s", sql
            ), name


def _strip_comments(sql: str) -> str:
    return "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--"))


def _run_reads(conn, report_id: int) -> dict[str, list[dict[str, Any]]]:
    results = {}
    for name, extra in _READS.items():
        params = {"workspace_id": "w1", "workspace_ids": ["w1"], **extra}
        if name in ("report_findings", "workspace_report"):
            params["report_id"] = report_id
        rows = trails.fetch_all(conn, name, params)
        for row in rows:
            row.pop("id", None)
            row.pop("created_at", None)
            if "workspace_id" in row:
                assert row["workspace_id"] == "w1", (name, row)
        results[name] = rows
    return results


def test_no_query_reads_another_workspace(conn, tmp_path):
    """With a second workspace reusing every id, each query returns for w1 exactly what it returns alone."""
    _seed_workspace(conn, "w1")
    _seed_workspace(conn, "w2", shift=timedelta(hours=2))
    for ws in ("w1", "w2"):
        trails.record_extraction_event(
            conn,
            workspace_id=ws,
            connector_id="crm_api",
            run_id="run-2",
            operation="fetch",
            started_at=AS_OF - timedelta(hours=1),
            duration_ms=700 if ws == "w1" else 9000,
            status="ok" if ws == "w1" else "error",
        )
    conn.commit()
    outcome = rep.reconcile_workspace(conn, "w1", AS_OF, directory=tmp_path)
    rep.reconcile_workspace(conn, "w2", AS_OF, directory=tmp_path)
    with_both = _run_reads(conn, outcome["report_id"])
    assert all(with_both[name] for name in ("snapshot_bronze_tables", "connector_health", "report_findings"))

    for table in ("reconciliation_findings", "reconciliation_reports", *TRAIL_TABLES[:5]):
        conn.execute(
            psycopg.sql.SQL("DELETE FROM {} WHERE workspace_id = 'w2'").format(psycopg.sql.Identifier(table))
        )
    conn.commit()
    assert with_both == _run_reads(conn, outcome["report_id"])


def test_report_of_one_workspace_does_not_change_with_others(conn, tmp_path):
    """w1's stored report (findings and health) is the same with or without w2's rows."""
    _seed_workspace(conn, "w1")
    alone = rep.build_report(conn, "w1", AS_OF)
    _seed_workspace(conn, "w2", shift=-timedelta(hours=3))
    together = rep.build_report(conn, "w1", AS_OF)
    assert together == alone
    assert [(f.layer, f.kind, f.subject) for f in alone.findings] == [
        ("bronze", "stale", "crm/customers"),
        ("bronze", "missing", "crm/orders"),
        ("silver", "stale", "stg_customers"),
        ("silver", "missing", "stg_leads"),
        ("gold", "stale", "mart"),
    ]


def test_a_batch_of_workspaces_gives_each_its_own_report(conn):
    """Building w1 and w2 in one batch gives the same reports as building each one alone."""
    _seed_workspace(conn, "w1")
    _seed_workspace(conn, "w2", shift=timedelta(hours=2))
    together = rep.build_reports(conn, ["w2", "w1"], AS_OF)
    assert [r.workspace_id for r in together] == ["w2", "w1"]
    assert together == [rep.build_report(conn, "w2", AS_OF), rep.build_report(conn, "w1", AS_OF)]
    assert together[0].findings != together[1].findings


# --------------------------------------------------------------------------- stored reports


def test_reports_are_stored_with_history_and_new_findings(conn, tmp_path):
    """Two runs keep two reports; the second's new findings are those absent from the first; a re-run replaces."""
    _seed_workspace(conn, "w1")
    first = rep.reconcile_workspace(conn, "w1", AS_OF, directory=tmp_path)
    assert first["findings"] == 5 and len(first["new_findings"]) == 5

    trails.record_bronze_table(conn, workspace_id="w1", source_id="crm", table="orders", processed_at=AS_OF)
    trails.record_bronze_table(conn, workspace_id="w1", source_id="crm", table="fresh_one")
    conn.commit()
    later = AS_OF + timedelta(minutes=15)
    second = rep.reconcile_workspace(conn, "w1", later, directory=tmp_path)
    again = rep.reconcile_workspace(conn, "w1", later, directory=tmp_path)
    assert [f["subject"] for f in second["new_findings"]] == ["crm/fresh_one"]
    assert again["report_id"] == second["report_id"] and again["new_findings"] == second["new_findings"]

    history = trails.fetch_all(conn, "report_history", {"workspace_id": "w1", "limit": 10})
    assert [(h["as_of"], h["findings_count"], h["new_findings"]) for h in history] == [
        (later, 5, 1),
        (AS_OF, 5, 5),
    ]
    assert [(h["bronze_findings"], h["silver_findings"], h["gold_findings"]) for h in history] == [
        (2, 2, 1)
    ] * 2
    latest = trails.fetch_all(conn, "latest_report", {"workspace_id": "w1"})[0]
    assert latest["id"] == second["report_id"]
    assert [h["connector_id"] for h in latest["health"]] == ["crm_api"]
    assert latest["health"][0]["status"] == "healthy"
    stored = trails.fetch_all(
        conn, "report_findings", {"workspace_id": "w1", "report_id": second["report_id"]}
    )
    assert [(f["layer"], f["kind"], f["subject"]) for f in stored] == [
        ("bronze", "stale", "crm/customers"),
        ("bronze", "missing", "crm/fresh_one"),
        ("silver", "stale", "stg_customers"),
        ("silver", "missing", "stg_leads"),
        ("gold", "stale", "mart"),
    ]


def test_stored_reports_keep_any_text(conn):
    """Quotes, backslashes, braces, commas and non-ASCII text are stored exactly (a batch is sent as JSON)."""
    ws, table = 'wé "1" \\{}', "naïve \"q\" \\ {x}, 'y'"
    trails.record_source_run(
        conn, workspace_id=ws, source_id="src", status="ok", started_at=AS_OF - timedelta(hours=1)
    )
    trails.record_bronze_table(conn, workspace_id=ws, source_id="src", table=table)  # never loaded: missing
    trails.record_extraction_event(
        conn,
        workspace_id=ws,
        connector_id="cön",
        run_id="r",
        operation="fetch",
        started_at=AS_OF - timedelta(hours=1),
        duration_ms=10,
        status="ok",
    )
    conn.commit()
    report = rep.store_report(conn, rep.build_report(conn, ws, AS_OF))
    conn.commit()
    assert [f.subject for f in report.findings] == [f"src/{table}"]
    stored = trails.fetch_all(conn, "report_findings", {"workspace_id": ws, "report_id": report.report_id})
    assert [Finding.from_dict(row) for row in stored] == list(report.findings)
    latest = trails.fetch_all(conn, "latest_report", {"workspace_id": ws})[0]
    assert (latest["id"], latest["summary"]) == (report.report_id, report.markdown())
    assert latest["health"] == [h.to_dict() for h in report.health]


def test_artifacts_are_json_and_markdown(conn, tmp_path):
    """The JSON artifact holds the whole report; the Markdown names every finding and connector."""
    _seed_workspace(conn, "w/1")
    outcome = rep.reconcile_workspace(conn, "w/1", AS_OF, directory=tmp_path)
    folder = tmp_path / "20261130T150000Z"
    assert outcome["artifacts"] == {"json": str(folder / "w%2F1.json"), "markdown": str(folder / "w%2F1.md")}
    artifact = json.loads((folder / "w%2F1.json").read_text())
    assert artifact["workspace_id"] == "w/1" and len(artifact["findings"]) == 5
    assert artifact["connectors"][0]["connector_id"] == "crm_api"
    markdown = (folder / "w%2F1.md").read_text()
    assert "crm/orders" in markdown and "| crm_api | healthy |" in markdown


def test_reconcile_all_gives_each_batch_its_reports_and_artifacts(conn, tmp_path):
    """Batches of 2: the summary lists what reconciling the workspaces together gives, artifacts written."""
    for ws, hours in (("w1", 0), ("w2", 2), ("w3", -3)):
        _seed_workspace(conn, ws, shift=timedelta(hours=hours))
    conn.commit()
    summary = rep.reconcile_all(conn, AS_OF, directory=tmp_path, batch_size=2)
    assert summary["workspaces"] == 3
    for outcome in summary["reports"]:
        assert all(Path(path).is_file() for path in outcome["artifacts"].values())
    again = rep.reconcile_workspaces(conn, ["w1", "w2", "w3"], AS_OF, directory=tmp_path)  # replaces
    assert summary["reports"] == again


def test_reconcile_all_raises_a_failed_write_once_every_batch_is_stored(conn, tmp_path):
    """Artifacts are written beside the next batch; a write error still fails the run, after storing."""
    _seed_workspace(conn, "w1")
    _seed_workspace(conn, "w2")
    conn.commit()
    not_a_directory = tmp_path / "artifacts"
    not_a_directory.write_text("")
    with pytest.raises(OSError):
        rep.reconcile_all(conn, AS_OF, directory=not_a_directory, batch_size=1)
    stored = trails.fetch_all(conn, "latest_reports", {"workspace_ids": ["w1", "w2"]})
    assert [(r["workspace_id"], r["as_of"]) for r in stored] == [("w1", AS_OF), ("w2", AS_OF)]


def test_summary_of_zero_workspaces_is_empty(tmp_path):
    """summarise with no outcomes writes an empty summary instead of failing."""
    summary = rep.summarise([], AS_OF, tmp_path)
    assert (summary["workspaces"], summary["findings"], summary["new_findings"]) == (0, 0, [])
    assert "No workspaces" in (tmp_path / "20261130T150000Z" / "summary.md").read_text()
    assert json.loads((tmp_path / "20261130T150000Z" / "summary.json").read_text())["workspaces"] == 0


def test_snapshot_models_round_trip_through_the_writers(conn):
    """record_snapshot writes rows that load_snapshot reads back as the same models."""
    t = AS_OF - timedelta(hours=2)
    snapshot = Snapshot(
        source_runs=(SourceRun("w1", "s", "ok", t, AS_OF),),
        bronze_tables=(BronzeTable("w1", "s", "t", True, None),),
        transforms=(Transform("w1", "x", "silver", ("s/t",), t),),
    )
    trails.record_snapshot(conn, snapshot, [_event("w1", "c", "r", t, 10)])
    conn.commit()
    assert trails.load_snapshot(conn, "w1") == snapshot
    assert trails.load_event_log(conn, "w1", AS_OF).events == (_event("w1", "c", "r", t, 10),)
