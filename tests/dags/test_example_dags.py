"""Every file in dags/ imports cleanly and every DAG in it runs with ``dag.test()``."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

DAGS_FOLDER = Path(__file__).resolve().parents[2] / "dags"
DAG_FILES = sorted(p for p in DAGS_FOLDER.glob("*.py") if not p.name.startswith("_"))
# Tasks that fail on purpose, exactly these: the example's poison task lands in the dead-letter
# queue (so the task after it is upstream_failed), and dag.test() has no api-server, so the unconfigured sweeper fails at once.
INTENTIONALLY_FAILING = {
    "example_retry_pipeline": {"gold_risk_report", "publish_risk_report"},
    "dead_letter_sweeper": {"sweep_dead_letters"},
}


def _dagbag():
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(DAGS_FOLDER))


def test_dags_folder_has_dags():
    """The repository ships at least one example DAG."""
    assert DAG_FILES, "dags/ holds no DAG file"


def test_every_dag_file_imports_without_errors():
    """Airflow's own DagBag loads every file in dags/ without import errors."""
    bag = _dagbag()
    assert bag.import_errors == {}
    loaded = {Path(dag.fileloc).name for dag in bag.dags.values()}
    assert {p.name for p in DAG_FILES} <= loaded


def test_example_pipeline_is_scheduled_in_brasilia_time():
    """The example DAG runs daily at 07:00 America/Sao_Paulo."""
    dag = _dagbag().dags["example_retry_pipeline"]
    timetable = dag.timetable
    assert str(timetable.timezone) == "America/Sao_Paulo"
    assert timetable.expression == "0 7 * * *"


@pytest.mark.dags
@pytest.mark.parametrize("dag_id", sorted(_dagbag().dags) if DAG_FILES else [])
def test_every_dag_runs_with_dag_test(dag_id, airflow_db, provider_conn, capfd):
    """``dag.test()`` runs the DAG end to end; exactly the intended tasks fail, each for its stated reason."""
    dag = _dagbag().dags[dag_id]
    run = dag.test()
    output = capfd.readouterr().out
    tis = {ti.task_id: ti for ti in run.get_task_instances()}
    states = {task_id: ti.state for task_id, ti in tis.items()}
    assert states, f"{dag_id} ran no task"
    assert set(states.values()) <= {"success", "failed", "skipped", "upstream_failed"}
    # "skipped" is a success too: a mapped task over an empty list (no workspace seeded yet)
    failed = {task_id for task_id, state in states.items() if state not in ("success", "skipped")}
    assert failed == INTENTIONALLY_FAILING.get(dag_id, set()), states
    assert run.state == ("failed" if failed else "success"), states
    with psycopg.connect(provider_conn) as conn:
        letters = conn.execute("SELECT task_id, failure_class, category FROM retry_dead_letters").fetchall()
    if dag_id == "example_retry_pipeline":  # poison: ran once and went to the dead-letter queue
        assert tis["gold_risk_report"].try_number == 1
        assert letters == [("gold_risk_report", "poison", "not-found")]
    elif dag_id == "dead_letter_sweeper":  # no API connection: fails at once, saying so, no retry
        assert tis["sweep_dead_letters"].try_number == 1
        assert "sweeper not configured: define the Airflow connection retry_provider_airflow_api" in output
        assert letters == []
