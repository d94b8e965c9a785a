"""The medallion operators inside Airflow's task runner (``dag.test()``): one copy per retry, skips, trails."""

from __future__ import annotations

import psycopg
import pytest

from tests.conftest import task_tries

pytestmark = pytest.mark.dags


def _example_dag():
    from airflow.dag_processing.dagbag import DagBag

    from tests.conftest import REPO

    return DagBag(dag_folder=str(REPO / "dags" / "example_retry_pipeline.py")).dags["example_retry_pipeline"]


def _query(dsn: str, sql: str, params: dict | None = None) -> list[tuple]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(sql, params or {}).fetchall()


@pytest.fixture(scope="module")
def example_run(airflow_db, pg_server):
    """One dag.test() run of the example pipeline on an empty database of its own."""
    import os
    import uuid

    name = f"arp_medallion_{uuid.uuid4().hex[:8]}"
    dsn = pg_server.create_database(name)  # empty: the DAG must create everything it needs
    previous = os.environ.get("AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT")
    os.environ["AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT"] = dsn
    try:
        yield _example_dag().test(), dsn
    finally:
        if previous is None:
            os.environ.pop("AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT", None)
        else:
            os.environ["AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT"] = previous
        pg_server.drop_database(name)


def test_a_load_that_failed_after_writing_leaves_exactly_one_copy(example_run):
    """The bronze load's first try commits its rows then loses the connection; the retry replaces them."""
    run, dsn = example_run
    states = {ti.task_id: (ti.state, ti.try_number) for ti in run.get_task_instances()}
    assert states["load_bronze_positions"] == ("success", 2)
    tries = task_tries("example_retry_pipeline", run.run_id, "load_bronze_positions")
    assert "retryable/connection-failed: ConnectionResetError:" in tries[0][3]
    rows = _query(dsn, "SELECT id, count(*) FROM example_bronze_positions GROUP BY id ORDER BY id")
    assert len(rows) == 5 and {count for _, count in rows} == {1}
    interval = {"start": run.data_interval_start, "end": run.data_interval_end}
    outside = _query(
        dsn,
        "SELECT count(*) FROM example_bronze_positions WHERE traded_at < %(start)s OR traded_at >= %(end)s",
        interval,
    )
    assert outside == [(0,)]
    ledger = _query(
        dsn,
        "SELECT status, claims FROM retry_work_units WHERE work_unit_key LIKE '%%/load_bronze_positions/%%'",
    )
    assert ledger == [("succeeded", 2)]


def test_pipeline_reaches_gold_and_the_poison_task_is_dead_lettered(example_run):
    """Silver and gold are computed once; only the poison report fails, once, into the DLQ."""
    run, dsn = example_run
    states = {ti.task_id: (ti.state, ti.try_number) for ti in run.get_task_instances()}
    assert states == {
        "prepare": ("success", 1),
        "extract_positions": ("success", 1),
        "load_bronze_positions": ("success", 2),
        "silver_positions": ("success", 1),
        "gold_exposure": ("success", 1),
        "gold_risk_report": ("failed", 1),
        "publish_risk_report": ("upstream_failed", 0),
    }
    assert run.state == "failed"
    assert _query(dsn, "SELECT amount, books, version FROM example_gold_exposure") == [(1500, 3, "v1")]
    letters = _query(dsn, "SELECT task_id, failure_class, category FROM retry_dead_letters")
    assert letters == [("gold_risk_report", "poison", "not-found")]


def test_trails_record_the_source_run_events_bronze_and_transforms(example_run):
    """The operators wrote the trails the reconciliation reads, in medallion order."""
    _, dsn = example_run
    runs = _query(dsn, "SELECT source_id, status, finished_at FROM source_runs WHERE workspace_id = 'demo'")
    assert [(r[0], r[1]) for r in runs] == [("positions_api", "ok")]
    events = _query(
        dsn, "SELECT connector_id, operation, status, duration_ms >= 0 FROM extraction_events ORDER BY id"
    )
    assert events == [
        ("positions_api", "count_trades", "ok", True),
        ("positions_api", "list_books", "ok", True),
    ]
    bronze = _query(dsn, "SELECT source_id, table_name, processed_at FROM bronze_tables")
    assert [(b[0], b[1]) for b in bronze] == [("positions_api", "example_bronze_positions")]
    transforms = dict(
        (r[0], r[1:]) for r in _query(dsn, "SELECT transform_id, layer, inputs, last_run_at FROM transforms")
    )
    assert set(transforms) == {"silver_positions", "gold_exposure", "gold_risk_report"}
    assert transforms["gold_risk_report"] == ("gold", ["silver_positions"], None)  # registered, never run
    assert transforms["silver_positions"][:2] == ("silver", ["positions_api/example_bronze_positions"])
    assert runs[0][2] <= bronze[0][2] <= transforms["silver_positions"][2] <= transforms["gold_exposure"][2]


def test_the_fixed_risk_report_reads_silver_and_the_run_succeeds(airflow_db, pg_server, monkeypatch):
    """With the Variable example_risk_report_fixed set to yes, the report runs and the run succeeds."""
    import uuid

    name = f"arp_medallion_fixed_{uuid.uuid4().hex[:8]}"
    dsn = pg_server.create_database(name)
    monkeypatch.setenv("AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT", dsn)
    monkeypatch.setenv("AIRFLOW_VAR_EXAMPLE_RISK_REPORT_FIXED", "yes")
    try:
        run = _example_dag().test()
        states = {ti.task_id: ti.state for ti in run.get_task_instances()}
        assert states["gold_risk_report"] == states["publish_risk_report"] == "success", states
        assert run.state == "success"
        assert _query(dsn, "SELECT count(*) FROM retry_dead_letters") == [(0,)]
        ran = _query(
            dsn, "SELECT last_run_at IS NOT NULL FROM transforms WHERE transform_id = 'gold_risk_report'"
        )
        assert ran == [(True,)]
    finally:
        pg_server.drop_database(name)


def test_kill_switch_off_skips_instead_of_failing(airflow_db, provider_conn, monkeypatch):
    """A switch off by env var or by Variable skips its tasks; other kinds and plain tasks run."""
    from tests.dag_files.execution_dags import kill_switch_dag

    monkeypatch.setenv("AIRFLOW_RETRY_KILL_SWITCH_INGESTION", "off")
    monkeypatch.setenv("AIRFLOW_VAR_RETRY_PROVIDER_KILL_SWITCH_REPORTS", "Off")  # the Variable
    run = kill_switch_dag.test()
    states = {ti.task_id: (ti.state, ti.try_number) for ti in run.get_task_instances()}
    assert states == {
        "ingest": ("skipped", 1),
        "report": ("skipped", 1),
        "dashboard": ("success", 1),
        "unaffected": ("success", 1),
    }
    assert run.state == "success"
    assert _query(provider_conn, "SELECT count(*) FROM retry_dead_letters") == [(0,)]
