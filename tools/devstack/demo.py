"""``make demo``: a real local Airflow on the repository's DAGs, and the product's story, step by step.

1. the example pipeline: a transient failure retried with its delay and reason, a poison task filed;
2. the reconciliation as of after the pipeline: the gap the poison task leaves, the connector's health;
3. the alert for the new root cause, received by a local SMTP server the demo starts;
4. the fix deployed (a Variable), the replay previewed, then replayed with downstream: the run succeeds;
5. the letter resolved, with its history.

Each step is printed as it happens, then the URL of each page. The ``dead_letter_sweeper`` DAG
is unpaused. Airflow's metadata database (the tries) is read by this operator tool, never by a task.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from devstack.airflow import ADMIN_PASSWORD, ADMIN_USER, AirflowStack
from devstack.metadata import run_tries_query
from devstack.postgres import PostgresServer, server_from_env_or_start
from devstack.redis import RedisServer, start_redis
from devstack.smtp import SmtpSink

PIPELINE_DAG = "example_retry_pipeline"
RECONCILIATION_DAG = "medallion_reconciliation"
SWEEPER_DAG = "dead_letter_sweeper"
WORKSPACE = "demo"  # the example pipeline's workspace in the trails
ALERT_TO = "oncall@example.test"
FIX_VARIABLE = "example_risk_report_fixed"  # what gold_risk_report reads (dags/example_retry_pipeline.py)
FIX_VERSION = "risk-report-reads-silver"
DEAD_LETTERS_PATH = "/retry-provider/"
METADATA_DB = "airflow_retry_demo_meta"
PROVIDER_DB = "airflow_retry_demo"


def _stop_on_sigterm() -> None:
    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def run_demo(workdir: Path, dags_folder: Path, once: bool, timeout: float = 600, celery: bool = False) -> int:
    """Start PostgreSQL and Airflow, tell the story, print the pages; stop everything (at once with ``once``).

    With ``celery``: a Redis broker too, and Airflow's distributed shape (CeleryExecutor with two
    workers, two schedulers, an api-server with two workers).
    """
    _stop_on_sigterm()
    workdir = workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    server: PostgresServer | None = None
    stack: AirflowStack | None = None
    redis: RedisServer | None = None
    sink: SmtpSink | None = None
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
        distributed: dict[str, Any] = {}
        if celery:
            redis = start_redis()
            say(f"Redis broker on port {redis.port}")
            distributed = {"broker_url": redis.url, "schedulers": 2, "celery_workers": 2, "api_workers": 2}
        sink = SmtpSink().start()  # before Airflow: its processes read where alerts go
        say(f"SMTP server for the alerts on port {sink.port}")
        stack = AirflowStack(
            home=workdir / "airflow-home",
            dags_folder=dags_folder,
            metadata_url=metadata_url,
            provider_dsn=provider_dsn,
            extra_env=alert_env(sink),
            **distributed,
        )
        say("migrating Airflow's metadata database")
        stack.migrate()
        say("starting " + ", ".join(stack.components()))
        stack.start()
        stack.wait_healthy()
        sync_example_pools(stack)
        print("\n=== airflow-retry-provider demo ===", flush=True)
        step(1, "the pipeline: a transient failure retried, a poison task filed")
        pipeline = run_example(stack, PIPELINE_DAG, timeout)
        print_summary(server, [pipeline], provider_dsn)
        letters = print_dead_letters(provider_dsn)
        step(2, "the reconciliation, as of after the pipeline")
        unpause(stack, SWEEPER_DAG)
        say(f"{SWEEPER_DAG} unpaused: the safety net sweeps every 10 minutes")
        run_reconciliation(stack, timeout)
        print_gap_report(provider_dsn)
        poison = next(letter for letter in letters if letter.task_id == "gold_risk_report")
        step(3, "the alert for the new root cause")
        print_alert(sink, poison)
        step(4, "deploy the fix, preview the replay, replay it with downstream")
        deploy_fix_and_replay(stack, poison, timeout)
        print_summary(
            server, [stack.api("GET", f"/api/v2/dags/{PIPELINE_DAG}/dagRuns/{poison.run_id}")], provider_dsn
        )
        step(5, "the letter resolved, with its history")
        print_letter(provider_dsn, poison.id, timeout)
        print_pages(stack, letters)
        if not once:
            print("The stack stays up until Ctrl-C.", flush=True)
            while True:
                time.sleep(3600)
        return 0
    except KeyboardInterrupt:
        return 0
    finally:
        say("stopping")
        if stack is not None:
            stack.stop()
        if redis is not None:
            redis.stop()
        if server is not None:
            server.stop()
        if sink is not None:
            sink.stop()


def sync_example_pools(stack: AirflowStack) -> None:
    """Create the pools of the shipped dependency map (the example DAG's extraction uses positions_db)."""
    from airflow_retry_provider.capacity import example_dependencies_path, load_dependencies, sync_pools
    from airflow_retry_provider.hooks.airflow_api import ApiCredentials

    changes = sync_pools(
        load_dependencies(example_dependencies_path()),
        ApiCredentials(stack.base_url, ADMIN_USER, ADMIN_PASSWORD),
    )
    say("pools: " + ", ".join(f"{change.pool} {change.action}" for change in changes))


def run_example(stack: AirflowStack, dag_id: str, timeout: float) -> dict[str, Any]:
    """Unpause ``dag_id``, wait for the scheduler's run of the latest interval (or trigger one) and its end."""
    unpause(stack, dag_id)
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


def unpause(stack: AirflowStack, dag_id: str) -> None:
    stack.wait_for_dag(dag_id)
    stack.api("PATCH", f"/api/v2/dags/{dag_id}", json={"is_paused": False})


def run_reconciliation(stack: AirflowStack, timeout: float) -> dict[str, Any]:
    """Trigger a reconciliation as of now, after the pipeline's events, and wait for its end.

    The run the scheduler makes on unpausing is dated at the latest 15-minute slot, before the
    pipeline ran; its report would see none of it.
    """
    unpause(stack, RECONCILIATION_DAG)
    as_of = datetime.now(timezone.utc).isoformat(timespec="seconds")
    run_id = stack.api(
        "POST",
        f"/api/v2/dags/{RECONCILIATION_DAG}/dagRuns",
        json={"logical_date": None, "conf": {"as_of": as_of}},
    )["dag_run_id"]
    say(f"{RECONCILIATION_DAG}: waiting for run {run_id} (as of {as_of})")
    run = stack.wait_for_run(RECONCILIATION_DAG, run_id, timeout=timeout)
    if run["state"] != "success":
        raise RuntimeError(f"{RECONCILIATION_DAG} run {run_id} ended {run['state']}")
    return run


def alert_env(sink: SmtpSink) -> dict[str, str]:
    """Alerts by e-mail through Airflow's SmtpNotifier, to the demo's SMTP server."""
    notifiers = [
        {
            "name": "oncall-mail",
            "class": "airflow.providers.smtp.notifications.smtp.SmtpNotifier",
            "kwargs": {"to": ALERT_TO, "smtp_conn_id": "smtp_alerts"},
        }
    ]
    return {
        "AIRFLOW__RETRY_PROVIDER__ALERT_NOTIFIERS": json.dumps(notifiers),
        "AIRFLOW_CONN_SMTP_ALERTS": sink.connection_json(),
    }


def print_alert(sink: SmtpSink, letter: Any, timeout: float = 120) -> None:
    """The e-mail about the letter's root cause, as the demo's SMTP server received it."""
    about = f"{letter.dag_id}.{letter.task_id}"
    deadline = time.monotonic() + timeout
    while not any(about in subject for subject in sink.subjects()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"no e-mail about {about} within {timeout}s; received: {sink.subjects()}")
        time.sleep(1)
    print(f"E-mails received for {ALERT_TO} by the local SMTP server (port {sink.port}):")
    for subject in sink.subjects():
        print(f"  Subject: {subject}")
    sys.stdout.flush()


def deploy_fix_and_replay(stack: AirflowStack, letter: Any, timeout: float) -> None:
    """Deploy the fix (a Variable), preview the replay, replay with downstream, wait for the run's success."""
    stack.api(
        "POST",
        "/api/v2/variables",
        json={"key": FIX_VARIABLE, "value": "yes", "description": "demo: the risk report reads silver"},
    )
    print(f"Fix deployed: Variable {FIX_VARIABLE} = yes (gold_risk_report reads silver now)")
    selection = {"ids": [letter.id], "downstream": True}
    preview = stack.api("POST", f"{DEAD_LETTERS_PATH}api/preview", json=selection)
    print(f"Preview: {preview['count']} letter(s), {preview['instance_count']} task instance(s) to clear:")
    for item in preview["items"]:
        for ti in item["instances"]:
            print(f"  {ti['task_id']} (now {ti['state']})")
    job = stack.api(
        "POST",
        f"{DEAD_LETTERS_PATH}api/replays",
        json={**selection, "reason": "the report reads silver now", "fix_version": FIX_VERSION},
    )
    deadline = time.monotonic() + timeout
    while not job["finished"]:
        if time.monotonic() > deadline:
            raise TimeoutError(f"replay job {job['id']} did not finish within {timeout}s")
        time.sleep(2)
        job = stack.api("GET", f"{DEAD_LETTERS_PATH}api/jobs/{job['id']}")
    print(f"Replay job {job['id']} {job['status']}: {job['counts']}", flush=True)
    say(f"{letter.dag_id}: waiting for run {letter.run_id} after the replay")
    run = stack.wait_for_run(letter.dag_id, letter.run_id, timeout=timeout)
    if run["state"] != "success":
        raise RuntimeError(f"{letter.dag_id} run {letter.run_id} ended {run['state']} after the replay")


def print_letter(provider_dsn: str, letter_id: int, timeout: float) -> None:
    """The letter once resolved (by its task's success callback), with its history."""
    from airflow_retry_provider.dlq.store import DeadLetterStore

    store = DeadLetterStore.from_dsn(provider_dsn)
    deadline = time.monotonic() + timeout
    letter = store.get(letter_id)
    while letter is None or letter.status != "resolved":
        if time.monotonic() > deadline:
            raise TimeoutError(f"letter {letter_id} is {letter.status if letter else 'gone'}, not resolved")
        time.sleep(2)
        letter = store.get(letter_id)
    print(
        f"Letter #{letter.id} {letter.dag_id}.{letter.task_id} [{letter.status}] {letter.status_reason or ''}"
    )
    for event in store.events(letter_id):
        print(f"  {event.line()}")
    sys.stdout.flush()


def print_summary(server: PostgresServer, runs: list[dict[str, Any]], provider_dsn: str) -> None:
    """Each run's task instances, every try with its reason (a retry's delay too), and each letter filed."""
    from airflow_retry_provider.dlq.store import DeadLetterStore

    store = DeadLetterStore.from_dsn(provider_dsn)
    with server.connect(METADATA_DB) as conn:
        for run in runs:
            interval = f"{run.get('data_interval_start')} .. {run.get('data_interval_end')}"
            print(f"\n{run['dag_id']}  run {run['dag_run_id']}  state={run['state']}  interval {interval}")
            # every try from Airflow's metadata database (the REST API carries no retry delay), read
            # as Airflow 3.3 or 3.4 keeps them; by this operator tool, never by a task
            tries: dict[tuple[str, int], list[dict[str, Any]]] = {}
            for row in run_tries_query(conn, run["dag_id"], run["dag_run_id"]):
                tries.setdefault((row["task_id"], row["map_index"]), []).append(row)
            letters = [
                letter
                for letter in store.list(limit=200)
                if (letter.dag_id, letter.run_id) == (run["dag_id"], run["dag_run_id"])
            ]
            for key, rows in sorted(tries.items()):
                print("\n".join(task_story(key, rows, letters)))


def task_story(key: tuple[str, int], rows: list[dict[str, Any]], letters: list[Any]) -> list[str]:
    """The lines of one task instance: its final state, each try (its delay and reason, if any) and its
    letter; a task that never ran says so instead of showing a try 0."""
    task_id, map_index = key
    label = task_id if map_index < 0 else f"{task_id}[{map_index}]"
    final = rows[-1]
    ran = [row for row in rows if (row["try_number"] or 0) > 0]
    if not ran:
        return [f"  {label:<28} did not run ({final['state'] or 'no state yet'})"]
    lines = [f"  {label:<28} {final['state'] or 'none':<16} tries={final['try_number']}"]
    for row in ran:
        delay_s, reason = row["retry_delay_override"], row["retry_reason"]
        line = f"      try {row['try_number']}: {row['state']}"
        if delay_s is not None:
            line += f", retry after {delay_s:.3f}s"
        lines.append(f"{line}: {reason}" if reason else line)
    for letter in letters:
        if (letter.task_id, letter.map_index) == key:
            if not ran[-1]["retry_reason"]:  # Airflow 3.3 keeps no reason on a failed try: the letter's
                lines[-1] += f": {letter.reason}"
            lines.append(
                f"      letter #{letter.id} [{letter.status}] {letter.failure_class}/{letter.category}"
            )
    return lines


def print_dead_letters(provider_dsn: str) -> list[Any]:
    """What is in the dead-letter queue, and why; return the letters."""
    from airflow_retry_provider.dlq.store import DeadLetterStore

    letters = DeadLetterStore.from_dsn(provider_dsn).list(limit=20)
    print(f"\nDead-letter queue: {len(letters)} letter(s)")
    for letter in letters:
        print(f"  #{letter.id} {letter.dag_id}.{letter.task_id} [{letter.status}] {letter.category}")
        print(f"      {letter.reason}")
    sys.stdout.flush()
    return list(letters)


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
            for health in report["health"]:
                print(
                    f"      connector {health['connector_id']} {health['status']}: {health['runs']} run(s), "
                    f"{health['failed_runs']} failed, p50 {_ms(health['p50_ms'])}, p95 {_ms(health['p95_ms'])}, "
                    f"freshness {_seconds(health['freshness_seconds'])} (last run {health['last_run_at']})"
                )
    sys.stdout.flush()


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} ms"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} s"


def print_pages(stack: AirflowStack, letters: list[Any]) -> None:
    """The URL of each page the story populated."""
    base = stack.base_url + DEAD_LETTERS_PATH
    print(f"\nAirflow UI: {stack.base_url}  (login {ADMIN_USER} / {ADMIN_PASSWORD})")
    print(f"Dead letters: {base}")
    for letter in letters:
        print(f"Letter #{letter.id} ({letter.task_id}): {base}letters/{letter.id}")
    print(f"Medallion gaps: {base}medallion-gaps?workspace_id={WORKSPACE}")
    print(f"Connector health: {base}connector-health?workspace_id={WORKSPACE}")
    sys.stdout.flush()


def step(number: int, title: str) -> None:
    print(f"\n--- step {number}: {title} ---", flush=True)


def say(message: str) -> None:
    print(f"[demo] {message}", file=sys.stderr, flush=True)
