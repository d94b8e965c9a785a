"""The ``medallion_reconciliation`` DAG: schedule, cheap import, and ``dag.test()`` on seeded PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest

from airflow_retry_provider.reconciliation import percentile_cont, trails
from airflow_retry_provider.reconciliation.schema import apply_trail_schema

# the one line docs/INSTALL.md gives a deployment: the DAG comes from the installed package
DAG_FILE = Path(__file__).resolve().parents[2] / "dags" / "retry_provider_maintenance.py"
UTC = timezone.utc
AS_OF = datetime(2026, 11, 30, 15, 0, tzinfo=UTC)
NOTIFICATIONS_ENV = "ARP_TEST_NOTIFICATIONS"


def record_notification(summary: dict[str, Any]) -> None:
    """A notifier for the tests: append the summary's new findings to a JSON-lines file."""
    with open(os.environ[NOTIFICATIONS_ENV], "a", encoding="utf-8") as out:
        out.write(json.dumps([f["subject"] for f in summary["new_findings"]]) + "\n")


def _dag():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAG_FILE))
    assert bag.import_errors == {}
    return bag.dags["medallion_reconciliation"]


@pytest.fixture(autouse=True)
def _params_restored():
    """The packaged DAG's params as they were, after each test.

    The DAG is built once, in the provider's module, so every DagBag of this process hands out that
    one object; ``dag.test(run_conf=...)`` runs its tasks in this process, and Airflow's merge of the
    run's conf into the params (``process_params``) resolves the DAG's own ``Param`` objects, keeping
    the value: a bad ``as_of`` here would stay on the DAG for every later test that runs it. (A
    task process in a deployment parses the DAG afresh, so there is nothing to keep.)
    """
    from airflow_retry_provider.dags.medallion_reconciliation import dag

    owners = [dag.params, *(task.params for task in dag.tasks)]
    saved = [[(param, param.value) for _, param in owner.items()] for owner in owners]
    yield
    for pairs in saved:
        for param, value in pairs:
            param.value = value


@pytest.fixture
def artifacts(tmp_path, monkeypatch) -> Path:
    """Artifacts go to a temporary directory."""
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__RECONCILIATION_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture
def seeded(provider_conn) -> str:
    """Two workspaces of trail rows in the provider database (tables created here until db init has them)."""
    t0 = AS_OF - timedelta(hours=6)
    with psycopg.connect(provider_conn) as conn:
        apply_trail_schema(conn)
        for ws in ("acme", "globex"):
            trails.record_source_run(
                conn, workspace_id=ws, source_id="crm", status="ok", started_at=t0, finished_at=t0
            )
            trails.record_bronze_table(
                conn, workspace_id=ws, source_id="crm", table="orders", processed_at=t0 + timedelta(minutes=5)
            )
            trails.record_transform(
                conn, workspace_id=ws, transform_id="stg_orders", layer="silver", inputs=["crm/orders"]
            )
            trails.record_expected_connector(conn, workspace_id=ws, connector_id="crm_api")
        # acme: a missing bronze table and a connector that fails half its runs
        trails.record_bronze_table(conn, workspace_id="acme", source_id="crm", table="leads")
        for i, status in enumerate(["ok", "error", "ok", "error"]):
            trails.record_extraction_event(
                conn,
                workspace_id="acme",
                connector_id="crm_api",
                run_id=f"r{i}",
                operation="fetch",
                started_at=t0 + timedelta(hours=i),
                duration_ms=1000 * (i + 1),
                status=status,
            )
        # globex: silver already ran after its input; the connector is expected but silent
        trails.record_transform(
            conn, workspace_id="globex", transform_id="stg_orders", layer="silver", last_run_at=AS_OF
        )
        conn.commit()
    return provider_conn


def _states(run) -> dict[str, list[str]]:
    states: dict[str, list[str]] = {}
    for ti in run.get_task_instances():
        states.setdefault(ti.task_id, []).append(ti.state)
    return states


def _reports(dsn: str) -> dict[str, dict[str, Any]]:
    with psycopg.connect(dsn) as conn:
        workspaces = trails.list_workspaces(conn)
        rows = trails.fetch_all(conn, "latest_reports", {"workspace_ids": workspaces})
        for row in rows:
            row["findings"] = trails.fetch_all(
                conn, "report_findings", {"workspace_id": row["workspace_id"], "report_id": row["id"]}
            )
    return {row["workspace_id"]: row for row in rows}


def test_dag_runs_every_15_minutes_in_brasilia_time():
    """The DAG is a cron trigger, */15 in America/Sao_Paulo, without catchup, one run at a time."""
    dag = _dag()
    assert dag.timetable.expression == "*/15 * * * *"
    assert str(dag.timetable.timezone) == "America/Sao_Paulo"
    assert dag.catchup is False and dag.max_active_runs == 1
    assert set(dag.task_dict) == {"list_workspaces", "reconcile_workspace", "summarise"}


def test_dag_file_imports_without_touching_the_database(tmp_path):
    """Parsing the DAG file opens no database connection: it parses with an unreachable connection."""
    env = {**os.environ, "AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT": "postgresql://nobody@127.0.0.1:1/none"}
    code = (
        "import runpy, sys; runpy.run_path(sys.argv[1]);"
        "print(sorted(m for m in sys.modules if m.startswith('airflow_retry_provider.reconciliation')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(DAG_FILE)], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.dags
def test_dag_stores_the_expected_findings_and_health(seeded, artifacts, airflow_db, monkeypatch, tmp_path):
    """dag.test() on two workspaces stores each one's findings and health; findings do not fail it."""
    notifications = tmp_path / "notifications.jsonl"
    monkeypatch.setenv(NOTIFICATIONS_ENV, str(notifications))
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__NOTIFIER_MODULES", "tests.dags")
    monkeypatch.setenv(
        "AIRFLOW_VAR_RETRY_PROVIDER_RECONCILIATION_NOTIFIER", f"{__name__}:record_notification"
    )
    run = _dag().test(logical_date=AS_OF)
    assert run.state == "success", _states(run)
    assert _states(run) == {
        "list_workspaces": ["success"],
        "reconcile_workspace": ["success", "success"],
        "summarise": ["success"],
    }

    reports = _reports(seeded)
    assert set(reports) == {"acme", "globex"}
    acme, globex = reports["acme"], reports["globex"]
    assert acme["as_of"] == AS_OF and acme["findings_count"] == 2
    assert [(f["layer"], f["kind"], f["subject"]) for f in acme["findings"]] == [
        ("bronze", "missing", "crm/leads"),
        ("silver", "missing", "stg_orders"),
    ]
    [health] = acme["health"]
    assert (health["connector_id"], health["runs"], health["failed_runs"], health["status"]) == (
        "crm_api",
        4,
        2,
        "failing",
    )
    durations = [1000.0, 2000.0, 3000.0, 4000.0]
    assert (health["error_rate"], health["p50_ms"], health["p95_ms"]) == (
        0.5,
        2500.0,
        percentile_cont(durations, 0.95),  # 3849.9999999999995, as PostgreSQL computes it
    )
    assert globex["findings"] == [] and globex["findings_count"] == 0
    assert [(h["connector_id"], h["status"], h["runs"]) for h in globex["health"]] == [
        ("crm_api", "stopped", 0)
    ]

    folder = artifacts / "20261130T150000Z"
    summary = json.loads((folder / "summary.json").read_text())
    assert (summary["workspaces"], summary["findings"], summary["unhealthy_connectors"]) == (2, 2, 2)
    assert (folder / "acme.md").exists() and (folder / "globex.json").exists()
    assert notifications.read_text().splitlines() == ['["crm/leads", "stg_orders"]']

    # The next run finds the same gaps: history grows, nothing is new, the notifier stays quiet.
    later = AS_OF + timedelta(minutes=15)
    assert _dag().test(logical_date=later).state == "success"
    assert _reports(seeded)["acme"]["as_of"] == later and _reports(seeded)["acme"]["new_findings"] == 0
    with psycopg.connect(seeded) as conn:
        history = trails.fetch_all(conn, "report_history", {"workspace_id": "acme", "limit": 10})
    assert [h["as_of"] for h in history] == [later, AS_OF]
    assert len(notifications.read_text().splitlines()) == 1


@pytest.mark.dags
def test_dag_on_an_empty_database_writes_an_empty_report(pg_server, artifacts, airflow_db, monkeypatch):
    """With no trail tables at all, the DAG creates them, finds zero workspaces and succeeds."""
    dsn = pg_server.create_database("arp_recon_empty")
    try:
        monkeypatch.setenv("AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT", dsn)
        run = _dag().test(run_conf={"as_of": "2026-11-30T12:00:00-03:00"})
        states = _states(run)
        assert run.state == "success", states
        assert states["list_workspaces"] == ["success"] and states["summarise"] == ["success"]
        summary = json.loads((artifacts / "20261130T150000Z" / "summary.json").read_text())
        assert (summary["workspaces"], summary["findings"], summary["reports"]) == (0, 0, [])
        assert _reports(dsn) == {}
    finally:
        pg_server.drop_database("arp_recon_empty")


@pytest.mark.dags
def test_dag_fails_on_its_own_errors(provider_conn, artifacts, airflow_db):
    """A bad as_of is the DAG's own error: the run fails (unlike findings, which never fail it)."""
    run = _dag().test(run_conf={"as_of": "yesterday"})
    assert run.state == "failed"
    assert _states(run)["list_workspaces"] == ["failed"]
