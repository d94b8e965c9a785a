"""A letter filed by the failure callback in ``dag.test()`` records the DAG version its task instance ran."""

from __future__ import annotations

import psycopg
import pytest

from tests.conftest import metadata_dsn
from tests.dag_files import policy_dags
from tests.integration.dlq import support

pytestmark = pytest.mark.dags


def test_the_callback_records_the_dag_version_its_task_instance_ran(airflow_db, provider_conn):
    """The letter holds the task instance's dag_version UUID from Airflow; no number or bundle it cannot know."""
    run = policy_dags.poison_dag.test()
    with psycopg.connect(metadata_dsn()) as conn:
        (ran,) = conn.execute(
            "SELECT dag_version_id::text FROM task_instance WHERE dag_id = %s AND run_id = %s AND task_id = %s",
            (run.dag_id, run.run_id, "invalid_job"),
        ).fetchone()
    (letter,) = [row for row in support.rows(provider_conn) if row["task_id"] == "invalid_job"]
    assert ran and letter["dag_version_id"] == ran
    # the worker knows the UUID only; dag.test() parses no bundle: nothing is made up
    assert (letter["dag_version_number"], letter["bundle_name"], letter["bundle_version"]) == (
        None,
        None,
        None,
    )
