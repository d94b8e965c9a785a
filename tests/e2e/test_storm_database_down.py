"""A storm while the provider's PostgreSQL is down (issue 58): 30 mapped poison failures while it refuses
connections, and once it is back every failure is exactly one letter, filed by its callback's retry or,
for a callback that gave up waiting, by the dead-letter sweeper; no try is run twice (each callback gave
up before Airflow's task_success_overtime would have killed it)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psycopg
import pytest

from airflow_retry_provider.dlq.callback import UNFILED_EVENT
from airflow_retry_provider.dlq.schema import apply_schema
from airflow_retry_provider.dlq.sync import SYNC_GRACE
from devstack.postgres import PostgresServer, start_cluster
from tests.conftest import running_airflow
from tests.dag_files.storm_dags import DATABASE_OUTAGE_SIZE
from tests.e2e.conftest import sample_until

pytestmark = pytest.mark.e2e

DAG_ID = "storm_database_outage"


@pytest.fixture(scope="module")
def provider_server() -> Iterator[PostgresServer]:
    """The provider's own PostgreSQL (Airflow's metadata stays on the session's), so it can be stopped alone."""
    server = start_cluster()  # in the system's temporary directory: initdb runs as the postgres user
    try:
        server.create_database("provider")
        with server.connect("provider", autocommit=False) as conn:
            apply_schema(conn)
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def airflow(pg_server, provider_server, tmp_path_factory):
    """One Airflow (LocalExecutor, parallelism 16) whose provider database is ``provider_server``'s."""
    extra_env = {"AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT": provider_server.dsn("provider")}
    with running_airflow(
        pg_server, tmp_path_factory.mktemp("storm-db-home"), "storm_db", extra_env=extra_env
    ) as running:
        yield running


def _letters(dsn: str) -> dict[str, int]:
    """The storm's letters by who filed them, and their distinct task instances."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT filed_by, count(*), count(DISTINCT (run_id, task_id, map_index)) FROM retry_dead_letters "
            "WHERE dag_id = %s GROUP BY filed_by",
            (DAG_ID,),
        ).fetchall()
    return {filed_by: count for filed_by, count, _ in rows} | {
        "distinct": sum(distinct for _, _, distinct in rows)
    }


def _gave_up(home: Path) -> list[Path]:
    """The storm's task logs whose callback gave up waiting for PostgreSQL (the unfiled line)."""
    logs = (home / "logs" / f"dag_id={DAG_ID}").glob("**/*.log")
    return [log for log in logs if UNFILED_EVENT in log.read_text(errors="replace")]


def test_a_storm_while_the_provider_database_is_down_files_every_failure_once_when_it_is_back(
    airflow, provider_server
):
    """PostgreSQL stopped before 30 mapped poison failures (16 run at once) and started again once the first
    callback gave up: 30 letters of 30 task instances, those whose callbacks gave up filed by the sweeper
    (once their failure is 2 minutes old), the rest by their callbacks' retries, each at try 1."""
    stack = airflow.stack
    dsn = provider_server.dsn("provider")
    stack.wait_for_dag(DAG_ID)
    stack.api("PATCH", f"/api/v2/dags/{DAG_ID}", json={"is_paused": False})
    provider_server.halt()
    try:
        run = stack.api(
            "POST",
            f"/api/v2/dags/{DAG_ID}/dagRuns",
            json={"logical_date": datetime.now(timezone.utc).isoformat()},
        )
        sample_until(lambda: bool(_gave_up(stack.home)), timeout=180)
    finally:
        provider_server.resume()
    ended = stack.wait_for_run(DAG_ID, run["dag_run_id"], timeout=300)
    assert ended["state"] == "failed"
    by_callback = _letters(dsn).get("callback", 0)
    # the sweeper leaves a failure that ended less than SYNC_GRACE ago to its callback
    settled = datetime.fromisoformat(ended["end_date"]) + SYNC_GRACE + timedelta(seconds=5)
    time.sleep(max(0.0, (settled - datetime.now(timezone.utc)).total_seconds()))

    stack.wait_for_dag("dead_letter_sweeper")
    stack.api("PATCH", "/api/v2/dags/dead_letter_sweeper", json={"is_paused": False})
    sweep = stack.api(
        "POST",
        "/api/v2/dags/dead_letter_sweeper/dagRuns",
        json={"logical_date": datetime.now(timezone.utc).isoformat()},
    )
    assert stack.wait_for_run("dead_letter_sweeper", sweep["dag_run_id"], timeout=300)["state"] == "success"
    letters = _letters(dsn)
    filed = {k: n for k, n in letters.items() if k != "distinct"}
    gave_up = len(_gave_up(stack.home))
    print(f"database outage storm: letters by who filed them {filed}; {gave_up} callback(s) gave up")
    assert sum(filed.values()) == DATABASE_OUTAGE_SIZE  # every failure
    assert letters["distinct"] == DATABASE_OUTAGE_SIZE  # none twice
    assert filed.get("callback", 0) == by_callback > 0  # retried until PostgreSQL was back
    assert filed.get("sweeper", 0) == gave_up  # given up by their callbacks, filed by the sweep
    tries = list((stack.home / "logs" / f"dag_id={DAG_ID}").glob("**/attempt=*.log"))
    assert {log.name for log in tries} == {"attempt=1.log"}  # no callback outlived Airflow's overtime
