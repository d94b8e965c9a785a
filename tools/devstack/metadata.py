"""Reads of Airflow's metadata database for the tests, the benchmarks and the demo (not in the wheel).

Every try of a DAG run with its retry delay and reason (Airflow's REST API carries no delay), and the
live try of each task instance, from whichever schema the database has: 3.3 keeps earlier tries in
``task_instance_history``, 3.4 keeps every try in ``task_instance``. The statements are
``metadata.sql``, beside this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from airflow_retry_provider.sql import parse_named

QUERIES = parse_named((Path(__file__).with_name("metadata.sql")).read_text("utf-8"))


def _run_rows(conn: Any, statement: str, dag_id: str, run_id: str) -> list[dict[str, Any]]:
    """Rows of ``statement``'s 3.3 or 3.4 variant (``<statement>_33`` / ``_34``), by the schema the database has."""
    cur = conn.cursor()
    cur.execute(QUERIES["has_try_history"])
    (has_history,) = cur.fetchone()
    cur.execute(QUERIES[f"{statement}_{'33' if has_history else '34'}"], {"dag_id": dag_id, "run_id": run_id})
    names = [column[0] for column in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def run_tries_query(conn: Any, dag_id: str, run_id: str) -> list[dict[str, Any]]:
    """Every try of every task of one DAG run (psycopg ``conn``): ``task_id, map_index, try_number, state,
    start_date, end_date, retry_delay_override, retry_reason``, ordered by task, map index and try."""
    return _run_rows(conn, "run_tries", dag_id, run_id)


def run_task_instances(conn: Any, dag_id: str, run_id: str) -> list[dict[str, Any]]:
    """The live try of every task instance of one DAG run (psycopg ``conn``): ``id, task_id, map_index, state, try_number, start_date``."""
    return _run_rows(conn, "run_task_instances", dag_id, run_id)
