"""``make demo``: a real local Airflow on the repository's DAGs, the example runs, and a summary."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path
from typing import Any

from airflow_retry_provider.devstack.airflow import ADMIN_PASSWORD, ADMIN_USER, AirflowStack
from airflow_retry_provider.devstack.postgres import PostgresServer, server_from_env_or_start

DEMO_DAGS = (
    "example_retry_pipeline",
    "medallion_reconciliation",
)  # in this order: the report reads the trails
DEAD_LETTERS_PATH = "/retry-provider/"
METADATA_DB = "airflow_retry_demo_meta"
PROVIDER_DB = "airflow_retry_demo"

# Every try of every task of one run, from Airflow's metadata database (the REST API does not
# expose the retry policy's delay and reason). Read by this operator tool, never by a task.
TRIES_SQL = """
SELECT task_id, map_index, try_number, state, retry_delay_override, retry_reason
FROM task_instance_history WHERE dag_id = %(dag_id)s AND run_id = %(run_id)s
UNION ALL
SELECT task_id, map_index, try_number, state, retry_delay_override, retry_reason
FROM task_instance WHERE dag_id = %(dag_id)s AND run_id = %(run_id)s
ORDER BY task_id, map_index, try_number
"""


def _stop_on_sigterm() -> None:
    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def run_demo(workdir: Path, dags_folder: Path, once: bool, timeout: float = 600) -> int:
    """Start PostgreSQL and Airflow, run the example DAGs, print a summary, stop everything."""
    _stop_on_sigterm()
    workdir = workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    server: PostgresServer | None = None
    stack: AirflowStack | None = None
    try:
        say("starting PostgreSQL")
        server = server_from_env_or_start()
        if server.workdir is not None:
            say(f"PostgreSQL cluster in {server.workdir} on port {server.port}")
        metadata_url = server.sqlalchemy_url(METADATA_DB)
        server.create_database(METADATA_DB)
        provider_dsn = server.create_database(PROVIDER_DB)
        from airflow_retry_provider.dlq.schema import apply_schema

        with server.connect(PROVIDER_DB, autocommit=False) as conn:
            apply_schema(conn)
        stack = AirflowStack(
            home=workdir / "airflow-home",
            dags_folder=dags_folder,
            metadata_url=metadata_url,
            provider_dsn=provider_dsn,
        )
        say("migrating Airflow's metadata database")
        stack.migrate()
        say("starting scheduler, dag-processor, api-server and triggerer")
        stack.start()
        stack.wait_healthy()
        sync_example_pools(stack)
        runs = [run_example(stack, dag_id, timeout) for dag_id in DEMO_DAGS]
        print_summary(server, runs)
        print_dead_letters(provider_dsn)
        print_gap_report(provider_dsn)
        print(f"\nAirflow UI: {stack.base_url}  (login {ADMIN_USER} / {ADMIN_PASSWORD})")
        print(f"Dead letters: {stack.base_url}{DEAD_LETTERS_PATH}")
        if not once:
            print("The stack stays up until Ctrl-C.")
            while True:
                time.sleep(3600)
        return 0
    except KeyboardInterrupt:
        return 0
    finally:
        say("stopping")
        if stack is not None:
            stack.stop()
        if server is not None:
            server.stop()


def sync_example_pools(stack: AirflowStack) -> None:
    """Create the pools of the shipped dependency map (the example DAG's extraction uses positions_db)."""
    from airflow_retry_provider.capacity import example_dependencies_path, load_dependencies, sync_pools
    from airflow_retry_provider.dlq.airflow_api import ApiCredentials

    changes = sync_pools(
        load_dependencies(example_dependencies_path()),
        ApiCredentials(stack.base_url, ADMIN_USER, ADMIN_PASSWORD),
    )
    say("pools: " + ", ".join(f"{change.pool} {change.action}" for change in changes))


def run_example(stack: AirflowStack, dag_id: str, timeout: float) -> dict[str, Any]:
    """Unpause ``dag_id``, wait for the scheduler's run of the latest interval (or trigger one) and its end."""
    stack.wait_for_dag(dag_id)
    stack.api("PATCH", f"/api/v2/dags/{dag_id}", json={"is_paused": False})
    deadline = time.monotonic() + 15  # a data-interval DAG gets its latest interval's run at once
    run_id = None
    while run_id is None and time.monotonic() < deadline:
        found = stack.api("GET", f"/api/v2/dags/{dag_id}/dagRuns", params={"limit": 1})
        if found["dag_runs"]:
            run_id = found["dag_runs"][0]["dag_run_id"]
        else:
            time.sleep(2)
    if run_id is None:  # an unscheduled DAG: trigger it by hand
        run_id = stack.api("POST", f"/api/v2/dags/{dag_id}/dagRuns", json={"logical_date": None})[
            "dag_run_id"
        ]
    say(f"{dag_id}: waiting for run {run_id}")
    return stack.wait_for_run(dag_id, run_id, timeout=timeout)


def print_summary(server: PostgresServer, runs: list[dict[str, Any]]) -> None:
    print("\n=== airflow-retry-provider demo ===")
    with server.connect(METADATA_DB) as conn:
        for run in runs:
            interval = f"{run.get('data_interval_start')} .. {run.get('data_interval_end')}"
            print(f"\n{run['dag_id']}  run {run['dag_run_id']}  state={run['state']}  interval {interval}")
            cursor = conn.cursor()
            cursor.execute(TRIES_SQL, {"dag_id": run["dag_id"], "run_id": run["dag_run_id"]})
            tries: dict[tuple[str, int], list[tuple[Any, ...]]] = {}
            for row in cursor.fetchall():
                tries.setdefault((row[0], row[1]), []).append(row)
            for (task_id, map_index), rows in sorted(tries.items()):
                label = task_id if map_index < 0 else f"{task_id}[{map_index}]"
                final = rows[-1]
                print(f"  {label:<28} {final[3] or 'none':<16} tries={final[2]}")
                for row in rows[:-1]:
                    delay = f"{row[4]:.3f}s" if row[4] is not None else "default"
                    print(f"      try {row[2]}: {row[3]}, retry after {delay}: {row[5] or ''}")


def print_dead_letters(provider_dsn: str) -> None:
    """What is in the dead-letter queue, and why."""
    from airflow_retry_provider.dlq.store import DeadLetterStore

    letters = DeadLetterStore.from_dsn(provider_dsn).list(limit=20)
    print(f"\nDead-letter queue: {len(letters)} letter(s)")
    for letter in letters:
        print(f"  #{letter.id} {letter.dag_id}.{letter.task_id} [{letter.status}] {letter.category}")
        print(f"      {letter.reason}")


def print_gap_report(provider_dsn: str) -> None:
    """The latest medallion gap report of each workspace."""
    import psycopg

    from airflow_retry_provider.reconciliation.trails import fetch_all, list_workspaces

    with psycopg.connect(provider_dsn) as conn:
        workspaces = list_workspaces(conn)
        reports = fetch_all(conn, "latest_reports", {"workspace_ids": workspaces}) if workspaces else []
        print(f"\nLatest gap report: {len(reports)} workspace(s)")
        for report in reports:
            print(
                f"  {report['workspace_id']}: {report['findings_count']} finding(s) as of {report['as_of']}"
            )
            for finding in fetch_all(
                conn, "report_findings", {"report_id": report["id"], "workspace_id": report["workspace_id"]}
            ):
                print(f"      {finding['layer']} {finding['kind']} {finding['subject']}: {finding['action']}")


def say(message: str) -> None:
    print(f"[demo] {message}", file=sys.stderr, flush=True)
