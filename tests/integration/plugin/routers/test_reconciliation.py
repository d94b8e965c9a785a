"""The "Medallion gaps" and "Connector health" pages and their JSON API, through TestClient with Airflow's auth.

Reports are built and stored by the real ``reconciliation/report.py`` functions on trail rows
written with ``reconciliation/trails.py`` in a fresh provider database; the app and Airflow's
multi-team SimpleAuthManager users come from ``test_plugin_app``. The rule under test: reading
reconciliation data needs read access to the ``medallion_reconciliation`` DAG; here that DAG is
put in team_b, so ``viewer_a`` (team_a) may not read it and ``admin`` may.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import psycopg
import pytest

from airflow_retry_provider.plugin.routers.reconciliation import RECONCILIATION_DAG_ID
from airflow_retry_provider.reconciliation import trails
from airflow_retry_provider.reconciliation.report import build_reports, store_reports
from tests.integration.plugin.test_app import Ui, airflow_auth, text_of, ui  # noqa: F401 (fixtures)

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)  # 09:00 in America/Sao_Paulo
STEP = timedelta(minutes=15)
EVIL = "<script>alert(1)</script>"

PAGES = ["/medallion-gaps", "/connector-health"]
API = [
    "/api/reconciliation/workspaces",
    "/api/reconciliation/report?workspace_id=ws-a",
    "/api/reconciliation/history?workspace_id=ws-a",
]


def seed(dsn: str) -> None:
    """Two workspaces' trails and three reports each (T0, T0+15m, T0+30m), stored by report.py.

    ws-a: a stale bronze table that is loaded before the second report, a never-loaded table named
    ``<script>...``, a silver transform that never ran, a gold one that never ran; connectors
    ``api`` (slow, one failed run of two) and ``db`` (fast, fine), and ``ftp`` expected but silent.
    ws-b: one missing bronze table ``secret_b_table`` and connector ``b_conn``.
    """
    with psycopg.connect(dsn) as conn:
        record = {"workspace_id": "ws-a"}
        trails.record_source_run(
            conn, **record, source_id="crm", status="ok", started_at=T0 - timedelta(hours=1), finished_at=T0
        )
        trails.record_bronze_table(
            conn, **record, source_id="crm", table="orders", processed_at=T0 - timedelta(hours=2)
        )
        trails.record_bronze_table(conn, **record, source_id="crm", table=EVIL)
        trails.record_bronze_table(
            conn, **record, source_id="crm", table="customers", processed_at=T0 - timedelta(minutes=30)
        )
        trails.record_transform(
            conn, **record, transform_id="s_orders", layer="silver", inputs=["crm/customers"]
        )
        trails.record_transform(
            conn,
            **record,
            transform_id="s_customers",
            layer="silver",
            inputs=["crm/customers"],
            last_run_at=T0 - timedelta(minutes=10),
        )
        trails.record_transform(conn, **record, transform_id="g_kpis", layer="gold", inputs=["s_customers"])
        trails.record_expected_connector(conn, **record, connector_id="ftp")
        ws_b = {"workspace_id": "ws-b"}
        trails.record_source_run(
            conn, **ws_b, source_id="erp", status="ok", started_at=T0 - timedelta(hours=1)
        )
        trails.record_bronze_table(conn, **ws_b, source_id="erp", table="secret_b_table")
        for k in range(3):
            as_of = T0 + k * STEP
            for n, (connector, ms, status) in enumerate(
                [
                    ("api", 4000 + 1000 * k, "ok"),
                    ("api", 6000, "error"),
                    ("db", 200, "ok"),
                    ("b_conn", 50, "ok"),
                ]
            ):
                trails.record_extraction_event(
                    conn,
                    workspace_id="ws-b" if connector == "b_conn" else "ws-a",
                    connector_id=connector,
                    run_id=f"r{k}-{n}",
                    operation="fetch",
                    started_at=as_of - timedelta(minutes=5),
                    duration_ms=ms,
                    status=status,
                )
            if k == 1:  # the stale table is loaded: one bronze finding fewer from the second report on
                trails.record_bronze_table(
                    conn, **record, source_id="crm", table="orders", processed_at=as_of - timedelta(minutes=1)
                )
            store_reports(conn, build_reports(conn, ["ws-a", "ws-b"], as_of))
            conn.commit()


@pytest.fixture
def dag_in_team_b(airflow_auth) -> Iterator[None]:  # noqa: F811 (the imported fixture)
    """Put ``medallion_reconciliation`` in team_b's bundle for the test, then restore it."""
    from airflow.models.dag import DagModel
    from airflow.utils.session import create_session

    with create_session() as session:
        dag = session.get(DagModel, RECONCILIATION_DAG_ID)
        before = None if dag is None else dag.bundle_name
        if dag is None:
            session.add(
                DagModel(
                    dag_id=RECONCILIATION_DAG_ID,
                    bundle_name="ui_bundle_b",
                    max_active_tasks=16,
                    max_consecutive_failed_dag_runs=0,
                    has_task_concurrency_limits=False,
                )
            )
        else:
            dag.bundle_name = "ui_bundle_b"
    try:
        yield
    finally:
        with create_session() as session:
            dag = session.get(DagModel, RECONCILIATION_DAG_ID)
            if before is None:
                session.delete(dag)
            else:
                dag.bundle_name = before


@pytest.fixture
def seeded(ui: Ui, dag_in_team_b) -> Ui:  # noqa: F811 (the imported fixture)
    """The app, with both workspaces' reports stored and the DAG in team_b."""
    seed(ui.dsn)
    return ui


# -- authentication and authorization -------------------------------------------------------------


@pytest.mark.parametrize("path", PAGES + API)
def test_every_reconciliation_route_answers_401_without_a_token(seeded: Ui, path: str):
    """No Airflow token, no page and no data: the routes sit behind Airflow's authentication."""
    answer = seeded.client.get(path)
    assert answer.status_code == 401
    assert "ws-a" not in answer.text


@pytest.mark.parametrize("path", PAGES + API)
def test_a_user_who_may_not_read_the_reconciliation_dag_gets_403_and_no_counts(seeded: Ui, path: str):
    """viewer_a may not read team_b's ``medallion_reconciliation``: 403, no workspace, no count."""
    route, _, query = path.partition("?")
    params = dict(p.split("=") for p in query.split("&") if p)
    answer = seeded.get(route, user="viewer_a", html=not path.startswith("/api/"), **params)
    assert answer.status_code == 403
    assert "ws-a" not in answer.text and "finding" not in answer.text.lower()
    assert seeded.get(route, user="admin", **params).status_code == 200


def test_the_rule_follows_the_dag_so_a_team_less_dag_is_readable_by_every_viewer(ui: Ui):  # noqa: F811
    """Without a team the DAG is readable by a team_a viewer, and so are the reports."""
    seed(ui.dsn)
    assert ui.get("/api/reconciliation/workspaces", user="viewer_a").status_code == 200
    assert ui.get("/medallion-gaps", user="viewer_a").status_code == 200


# -- Medallion gaps -------------------------------------------------------------------------------


def test_the_gaps_page_shows_the_latest_report_its_findings_and_a_chart(seeded: Ui):
    """The first workspace's latest report: counts, each finding's columns, the selector and an SVG chart."""
    answer = seeded.get("/medallion-gaps", html=True)
    assert answer.status_code == 200, answer.text
    html, text = answer.text, text_of(answer.text)
    rows = re.findall(r'<tr data-layer="(\w+)">', html)
    assert rows == ["bronze", "silver", "gold"]  # the stale table was loaded before this report
    assert re.search(r'id="findings-count">3<', html) and re.search(r'id="new-count">0<', html)
    assert "crm/" in text and "s_orders" in text and "g_kpis" in text and "missing" in text
    assert "2026-11-30 09:30:00" in text  # as_of T0+30m, in the UI's time zone (America/Sao_Paulo)
    assert 'title="2026-11-30T12:30:00Z UTC"' in html  # ISO UTC on hover
    assert '<option value="ws-a" selected>ws-a (3 findings)</option>' in html
    assert '<option value="ws-b" >ws-b (1 finding)</option>' in html
    chart = re.search(r'<div id="findings-chart">(.*?)</div>', html, re.S)
    assert chart and chart.group(1).startswith("<svg")
    assert "Open findings per layer" in chart.group(1)
    assert "2026-11-30 09:00 (2026-11-30T12:00:00Z): 2 open bronze finding(s)" in chart.group(1)
    assert len(re.findall(r'<tr(?: class="on")?>\s*<td><a href="[^"]*report_id=', html)) == 3  # history rows


def test_an_older_report_shows_its_own_findings_and_marks_new_ones(seeded: Ui):
    """The first report (from the history) has the stale table too; everything in it was new then."""
    history = seeded.get("/api/reconciliation/history", workspace_id="ws-a").json()["reports"]
    first = history[-1]["report_id"]
    html = seeded.get("/medallion-gaps", html=True, workspace_id="ws-a", report_id=first).text
    assert re.findall(r'<tr data-layer="(\w+)">', html) == ["bronze", "bronze", "silver", "gold"]
    assert "an older report" in html
    assert html.count('<span class="new"') == 4


def test_a_subject_with_markup_is_shown_as_text(seeded: Ui):
    """A table named ``<script>...`` is escaped in the findings table and in the chart's tooltips."""
    html = seeded.get("/medallion-gaps", html=True, workspace_id="ws-a").text
    assert EVIL not in html
    assert "crm/&lt;script&gt;alert(1)&lt;/script&gt;" in html
    api = seeded.get("/api/reconciliation/report", workspace_id="ws-a").json()
    assert f"crm/{EVIL}" in {f["subject"] for f in api["findings"]}


@pytest.mark.parametrize("path", PAGES)
def test_a_workspace_page_never_shows_another_workspaces_rows(seeded: Ui, path: str):
    """ws-b's page shows ws-b's finding or connector and nothing of ws-a's (ids in the selector aside)."""
    html = seeded.get(path, html=True, workspace_id="ws-b").text
    body = html.split("</form>", 1)[1]  # after the workspace selector
    assert "ws-a" not in body
    for other in ("crm/", "s_orders", "g_kpis", '"api"', "ftp", "&lt;script"):
        assert other not in body
    assert ("secret_b_table" if path == "/medallion-gaps" else "b_conn") in body


def test_unknown_workspaces_and_other_workspaces_reports_are_404(seeded: Ui):
    """A report id is only found within its own workspace."""
    ws_a = seeded.get("/api/reconciliation/report", workspace_id="ws-a").json()["report"]["report_id"]
    assert seeded.get("/api/reconciliation/report", workspace_id="ws-b", report_id=ws_a).status_code == 404
    assert seeded.get("/medallion-gaps", html=True, workspace_id="ws-b", report_id=ws_a).status_code == 404
    assert seeded.get("/connector-health", workspace_id="nope").status_code == 404
    assert seeded.get("/api/reconciliation/history", workspace_id="nope").status_code == 404


@pytest.mark.parametrize("path", PAGES)
def test_without_any_report_the_pages_say_so(ui: Ui, path: str):  # noqa: F811 (the imported fixture)
    """A fresh database: 200 and a note that the DAG writes reports, no chart."""
    answer = ui.get(path, html=True)
    assert answer.status_code == 200
    assert 'id="no-report"' in answer.text and "<svg" not in answer.text


# -- Connector health -----------------------------------------------------------------------------


def test_the_health_page_lists_connectors_with_badges_numbers_and_sparklines(seeded: Ui):
    """Each connector of the latest report: status badge, runs, error rate, p95, and two SVG sparklines."""
    html = seeded.get("/connector-health", html=True, workspace_id="ws-a").text
    rows = dict(re.findall(r'<tr data-connector="([^"]+)">(.*?)</tr>', html, re.S))
    assert list(rows) == ["api", "db", "ftp"]
    assert 'class="status status-failing">failing<' in rows["api"]  # one failed run of two
    assert 'class="status status-healthy">healthy<' in rows["db"]
    assert 'class="status status-stopped">stopped<' in rows["ftp"]
    api = text_of(rows["api"])
    assert " 50.0% " in api and "6,000 ms" in api
    for connector, row in rows.items():
        assert row.count("<svg") == 2, connector
        assert f"p95 of {connector}" in row and f"Error rate of {connector}" in row
    assert "2026-11-30 09:00 (2026-11-30T12:00:00Z): p95" in rows["api"]
    assert rows["ftp"].count("no data") == 2  # a silent connector: empty sparklines


# -- JSON API -------------------------------------------------------------------------------------


def test_the_workspaces_api_gives_each_workspaces_latest_report(seeded: Ui):
    """One summary per workspace: ids, counts, and the connectors that are not healthy."""
    body = seeded.get("/api/reconciliation/workspaces").json()
    a, b = body["workspaces"]
    assert (a["workspace_id"], a["findings_count"], a["new_findings"]) == ("ws-a", 3, 0)
    assert a["as_of"] == "2026-11-30T12:30:00+00:00" and a["window_hours"] == 24
    assert a["unhealthy_connectors"] == {"api": "failing", "ftp": "stopped"}
    assert (b["workspace_id"], b["findings_count"], b["connectors"]) == ("ws-b", 1, 1)
    assert set(a) == {
        "report_id",
        "workspace_id",
        "as_of",
        "created_at",
        "window_hours",
        "findings_count",
        "new_findings",
        "connectors",
        "unhealthy_connectors",
    }


def test_the_report_api_gives_findings_and_health(seeded: Ui):
    """The latest report with its findings (ISO UTC times, ``new`` flag) and its connector health."""
    body = seeded.get("/api/reconciliation/report", workspace_id="ws-a").json()
    assert body["report"]["workspace_id"] == "ws-a"
    assert [(f["layer"], f["kind"], f["new"]) for f in body["findings"]] == [
        ("bronze", "missing", False),
        ("silver", "missing", False),
        ("gold", "missing", False),
    ]
    assert body["findings"][0]["expected_after"] == "2026-11-30T11:00:00+00:00"
    assert [h["connector_id"] for h in body["health"]] == ["api", "db", "ftp"]
    assert set(body["health"][0]) >= {"runs", "failed_runs", "error_rate", "p50_ms", "p95_ms", "status"}


def test_the_history_api_gives_findings_per_layer_and_health_newest_first(seeded: Ui):
    """Reports newest first, each with open findings per layer and each connector's p95 and error rate."""
    body = seeded.get("/api/reconciliation/history", workspace_id="ws-a", limit=2).json()
    assert body["workspace_id"] == "ws-a"
    reports = body["reports"]
    assert [r["as_of"] for r in reports] == ["2026-11-30T12:30:00+00:00", "2026-11-30T12:15:00+00:00"]
    assert reports[0]["findings_by_layer"] == {"bronze": 1, "silver": 1, "gold": 1}
    full = seeded.get("/api/reconciliation/history", workspace_id="ws-a").json()["reports"]
    assert full[-1]["findings_by_layer"] == {"bronze": 2, "silver": 1, "gold": 1}
    api = [next(h for h in r["health"] if h["connector_id"] == "api") for r in reversed(full)]
    assert [h["error_rate"] for h in api] == [0.5, 0.5, 0.5]
    assert [h["p95_ms"] for h in api] == sorted(h["p95_ms"] for h in api)  # its slow run gets slower
    assert seeded.get("/api/reconciliation/history", workspace_id="ws-a", limit=1).status_code == 422


def test_the_api_routes_are_in_the_openapi_schema(seeded: Ui):
    """The JSON routes are documented under the ``reconciliation`` tag; the pages are not."""
    paths = seeded.get("/openapi.json").json()["paths"]  # signed in: the schema is not public
    for path in (
        "/api/reconciliation/workspaces",
        "/api/reconciliation/report",
        "/api/reconciliation/history",
    ):
        assert paths[path]["get"]["tags"] == ["reconciliation"]
    assert "/medallion-gaps" not in paths and "/connector-health" not in paths
