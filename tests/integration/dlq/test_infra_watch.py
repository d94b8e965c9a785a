"""Issue 57 on a real PostgreSQL against a local stand-in of Airflow's REST API: the infra watcher
records the tries no exception explains, files their letter ``infra/<category>`` with advice, reclassifies
an ``unknown`` letter, leaves code failures alone, groups a node's losses, and the sweeper files the same."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import psycopg
import pytest
from airflow.sdk.observability.stats import Stats

from airflow_retry_provider.cli import main
from airflow_retry_provider.dlq import infra_watch
from airflow_retry_provider.dlq.infra import node_fingerprint
from airflow_retry_provider.dlq.infra_watch import WATCH_NAME, InfraWatcher
from airflow_retry_provider.dlq.store import DeadLetterStore, FailedTry
from airflow_retry_provider.dlq.sweeper import _sweep_one
from airflow_retry_provider.hooks.airflow_api import AirflowApi, ApiCredentials, TaskInstanceRef
from tests.alert_notifiers import RecordingNotifier
from tests.factories import new_letter
from tests.local_airflow import BATCH_PATH, Reply, serve

DAG = "nightly"
RUN = "scheduled__2026-12-01"
KILLED_LINE = {
    "event": "Process terminated by signal. Likely out of memory error (OOM). For more information, see ...",
    "signal": -9,
    "signal_name": "SIGKILL",
    "level": "critical",
}
TRIES = re.compile(r"^/api/v2/dags/[^/]+/dagRuns/([^/]+)/taskInstances/([^/]+)/tries$")
LOGS = re.compile(r"^/api/v2/dags/[^/]+/dagRuns/([^/]+)/taskInstances/([^/]+)/logs/(\d+)$")
RUN_PATH = re.compile(r"^/api/v2/dags/[^/]+/dagRuns/([^/]+)$")


@dataclass
class Try:
    """One try of a task instance as the stand-in lists it, with its log and the scheduler's events."""

    state: str
    log: list[Any] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    hostname: str = "worker-7"
    ended: datetime = field(default_factory=lambda: datetime.now(timezone.utc))


class InfraAirflow:
    """Answers the calls the watcher and the sweeper make: the ended task instances, their tries, logs, events."""

    def __init__(self) -> None:
        self.tries: dict[tuple[str, str], list[Try]] = {}
        self.lock = threading.Lock()
        self.url = ""
        self.asked: list[str] = []
        """The path of every request, in order."""

    def api(self) -> AirflowApi:
        return AirflowApi(ApiCredentials(self.url, "admin", "admin"), timeout=10)

    def add(self, task_id: str, attempt: Try, run_id: str = RUN) -> None:
        with self.lock:
            self.tries.setdefault((run_id, task_id), []).append(attempt)

    def _ti(self, run_id: str, task_id: str) -> dict[str, Any]:
        tries = self.tries[(run_id, task_id)]
        last = tries[-1]
        return {
            "dag_id": DAG,
            "dag_run_id": run_id,
            "task_id": task_id,
            "map_index": -1,
            "state": last.state,
            "try_number": len(tries),
            "max_tries": 1,
            "start_date": (last.ended - timedelta(seconds=5)).isoformat(),
            "end_date": last.ended.isoformat(),
            "hostname": last.hostname,
        }

    def answer(self, method: str, path: str, body: dict[str, Any]) -> Reply:
        parts = urlsplit(path)
        query = parse_qs(parts.query)
        route = parts.path
        with self.lock:
            self.asked.append(route)
            if method == "POST" and route == "/auth/token":
                return Reply(201, {"access_token": "t0ken"})
            if route == "/api/v2/dags":
                return Reply(200, {"dags": [{"dag_id": DAG}], "total_entries": 1})
            if route.startswith("/api/v2/variables/"):
                return Reply(404, {"detail": "no variable"})
            if method == "POST" and route == BATCH_PATH:  # Airflow's filters, order and page
                found = [
                    self._ti(*key)
                    for key in sorted(self.tries)
                    if "state" not in body or self._ti(*key)["state"] in body["state"]
                ]
                for field in ("end_date", "start_date"):
                    if f"{field}_gte" in body:
                        since = datetime.fromisoformat(body[f"{field}_gte"])
                        found = [ti for ti in found if datetime.fromisoformat(ti[field]) >= since]
                if body.get("order_by") in ("end_date", "start_date"):
                    found.sort(key=lambda ti: datetime.fromisoformat(ti[body["order_by"]]))
                offset = int(body.get("page_offset", 0))
                page = found[offset : offset + int(body.get("page_limit", 100))]
                return Reply(200, {"task_instances": page, "total_entries": len(found)})
            if match := TRIES.match(route):
                tries = self.tries.get((unquote(match[1]), unquote(match[2])), [])
                return Reply(
                    200,
                    {
                        "task_instances": [
                            {
                                "try_number": number,
                                "state": attempt.state,
                                "start_date": (attempt.ended - timedelta(seconds=5)).isoformat(),
                                "end_date": attempt.ended.isoformat(),
                                "hostname": attempt.hostname,
                            }
                            for number, attempt in enumerate(tries, 1)
                        ]
                    },
                )
            if match := LOGS.match(route):
                tries = self.tries.get((unquote(match[1]), unquote(match[2])), [])
                return Reply(200, {"content": tries[int(match[3]) - 1].log, "continuation_token": None})
            if route == "/api/v2/eventLogs":
                tries = self.tries.get((query["run_id"][0], query["task_id"][0]), [])
                events = tries[int(query["try_number"][0]) - 1].events
                wanted = [e for e in events if e["event"] in query.get("included_events", [])]
                return Reply(200, {"event_logs": wanted, "total_entries": len(wanted)})
            if match := RUN_PATH.match(route):
                return Reply(200, {"dag_run_id": unquote(match[1]), "data_interval_end": None})
        return Reply(404, {"detail": f"not served: {method} {path}"})


@pytest.fixture
def airflow() -> Iterator[InfraAirflow]:
    """The stand-in, served on a loopback port."""
    fake = InfraAirflow()
    with serve(fake) as url:
        fake.url = url
        yield fake


def _watcher(dsn: str, airflow: InfraAirflow) -> InfraWatcher:
    return InfraWatcher(DeadLetterStore.from_dsn(dsn), airflow.api, poll=0.1)


def _failed_tries(dsn: str) -> list[tuple[str, int, str, str, str | None]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT task_id, try_number, failure_class, category, hostname FROM retry_failed_tries "
            "ORDER BY task_id, try_number"
        ).fetchall()


def _letters(dsn: str) -> list[dict[str, Any]]:
    with psycopg.connect(dsn) as conn:
        cur = conn.execute("SELECT * FROM retry_dead_letters ORDER BY id")
        names = [c.name for c in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def _events(dsn: str, letter_id: int) -> list[tuple[str, str, str]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT event, source, reason FROM retry_letter_events WHERE letter_id = %s ORDER BY id",
            (letter_id,),
        ).fetchall()


def test_a_task_killed_on_every_try_gets_each_try_recorded_and_one_infra_letter_with_advice(
    pg_dsn, airflow, monkeypatch
):
    """SIGKILL on both tries: try 1 recorded infra/killed at once, try 2's letter filed infra/killed, once,
    counted in the metrics and queued for its impact."""
    sent: list[str] = []
    monkeypatch.setattr(Stats, "incr", lambda name, count=1, *args, **kwargs: sent.append(name))
    watcher = _watcher(pg_dsn, airflow)
    airflow.add("load", Try("up_for_retry", log=[{"event": "starting"}, KILLED_LINE]))
    first = watcher.round()
    assert [outcome.category for outcome in first.recognised] == ["killed"]
    assert _failed_tries(pg_dsn) == [("load", 1, "infra", "killed", "worker-7")]
    assert _letters(pg_dsn) == []  # a try is left: no letter yet
    airflow.tries[(RUN, "load")][0].state = "failed"  # Airflow lists an archived try failed
    airflow.add("load", Try("failed", log=[KILLED_LINE]))
    watcher.round()
    watcher.round()  # read again within the overlap: decided once
    assert _failed_tries(pg_dsn) == [
        ("load", 1, "infra", "killed", "worker-7"),
        ("load", 2, "infra", "killed", "worker-7"),
    ]
    (letter,) = _letters(pg_dsn)
    assert (letter["failure_class"], letter["category"], letter["try_number"]) == ("infra", "killed", 2)
    assert letter["filed_by"] == "watcher"
    assert "SIGKILL" in letter["reason"] and "worker-7" in letter["reason"]
    assert "exhausted" not in letter["reason"]
    assert letter["fingerprint"] == node_fingerprint("worker-7")
    assert [event[:2] for event in _events(pg_dsn, letter["id"])] == [("filed", "watcher")]
    assert DeadLetterStore.from_dsn(pg_dsn).sweep_state(WATCH_NAME).watermark is not None
    assert sent.count("retry_provider.infra.killed") == 2
    assert "retry_provider.letter.created.killed" in sent
    with psycopg.connect(pg_dsn) as conn:  # the impact view computes it as any letter's
        assert conn.execute("SELECT letter_id FROM retry_impact_queue").fetchall() == [(letter["id"],)]


def test_dlq_list_filters_by_class(pg_dsn, capsys, monkeypatch):
    """`airflow-retry dlq list --class infra` lists the infra letters only; a class that is none is a usage error."""
    monkeypatch.delenv("AIRFLOW_CONN_RETRY_PROVIDER_AIRFLOW_API", raising=False)
    store = DeadLetterStore.from_dsn(pg_dsn)
    store.file(new_letter(task_id="code"), 3)
    infra_id = store.file(new_letter(task_id="killed", failure_class="infra", category="killed"), 3).letter_id
    assert main(["dlq", "list", "--dsn", pg_dsn, "--class", "infra", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [letter["id"] for letter in document["letters"]] == [infra_id]
    assert main(["dlq", "list", "--dsn", pg_dsn, "--class", "infra", "--category", "killed", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["count"] == 1
    assert main(["dlq", "list", "--dsn", pg_dsn, "--class", "oom"]) == 2
    assert "--class: 'oom' is not one of poison, retryable, unknown, infra" in capsys.readouterr().err


def test_a_killed_try_whose_retry_already_runs_is_recorded(pg_dsn, airflow):
    """Try 1 killed, try 2 running before a round saw it up for retry: try 1 is still recorded infra/killed."""
    airflow.add("load", Try("failed", log=[KILLED_LINE]))
    airflow.add("load", Try("running"))
    done = _watcher(pg_dsn, airflow).round()
    assert [outcome.category for outcome in done.recognised] == ["killed"]
    assert _failed_tries(pg_dsn) == [("load", 1, "infra", "killed", "worker-7")]
    assert _letters(pg_dsn) == []


def test_an_unknown_letter_of_a_try_with_infra_evidence_is_reclassified_with_an_event(pg_dsn, airflow):
    """The dag-processor's unknown/task-died letter of a heartbeat timeout becomes infra/heartbeat-timeout."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    died = new_letter(  # as the dag-processor's callback files it after the last try
        dag_id=DAG,
        run_id=RUN,
        task_id="load",
        failure_class="unknown",
        category="exhausted",
        exception_type="TaskDied",
        try_number=1,
    )
    letter_id = store.file(died, 3).letter_id
    airflow.add(
        "load",
        Try(
            "failed",
            events=[
                {
                    "event": "heartbeat timeout",
                    "extra": "{'DAG Id': 'nightly', 'Task Id': 'load', 'Run Id': 'x'}",
                }
            ],
        ),
    )
    _watcher(pg_dsn, airflow).round()
    (letter,) = _letters(pg_dsn)
    assert letter["id"] == letter_id
    assert (letter["failure_class"], letter["category"]) == ("infra", "heartbeat-timeout")
    event, _, reason = _events(pg_dsn, letter_id)[-1]
    assert event == "refiled" and reason.startswith(
        "reclassified unknown/task-died as infra/heartbeat-timeout"
    )


def test_a_failure_of_the_task_code_is_left_to_the_retry_policy(pg_dsn, airflow):
    """A try whose log has the task's traceback (even naming SIGKILL) but no exit line is not infra."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    store.file(new_letter(dag_id=DAG, run_id=RUN, task_id="load", failure_class="retryable"), 3)
    airflow.add("load", Try("failed", log=[{"event": "ValueError: the child got signal 9 (SIGKILL)"}]))
    done = _watcher(pg_dsn, airflow).round()
    assert done.recognised == () and done.errors == ()
    assert _failed_tries(pg_dsn) == []
    assert _letters(pg_dsn)[0]["failure_class"] == "retryable"


def test_a_lost_celery_worker_is_worker_lost_and_its_tasks_are_one_root_cause_with_one_alert(
    pg_dsn, airflow, monkeypatch
):
    """Three tasks lost on one worker: three letters infra/worker-lost, one fingerprint, one alert naming it."""
    monkeypatch.setenv(
        "AIRFLOW__RETRY_PROVIDER__ALERT_NOTIFIERS",
        json.dumps([{"name": "rec", "class": "tests.alert_notifiers.RecordingNotifier"}]),
    )
    RecordingNotifier.sent.clear()
    mismatch = {
        "event": "state mismatch",
        "extra": "Executor CeleryExecutor(parallelism=32) reported that the task instance <TaskInstance: x> "
        "finished with state failed, but the task instance's state attribute is running. Extra info: "
        "WorkerLostError('Worker exited prematurely: signal 9 (SIGKILL) Job: 3.')",
    }
    for task_id in ("a", "b", "c"):
        airflow.add(task_id, Try("failed", events=[mismatch], hostname="celery@node-3"))
    _watcher(pg_dsn, airflow).round()
    letters = _letters(pg_dsn)
    assert [(row["category"], row["fingerprint"]) for row in letters] == [
        ("worker-lost", node_fingerprint("celery@node-3"))
    ] * 3
    assert [sent["title"] for sent in RecordingNotifier.sent] == [
        "Worker or node celery@node-3: tasks lost (infra/worker-lost)"
    ]


def test_a_storm_of_failures_the_policy_recorded_costs_no_read_of_their_tries(pg_dsn, airflow):
    """Forty task instances whose every try the retry policy recorded (a poison storm, and retries of
    a retryable cause) are listed, and their tries are not asked for; one try nobody recorded still is,
    and so is a final try recorded infra (its letter may still be due). The round counts its calls."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    for n in range(40):
        task_id = f"storm_{n:02d}"
        airflow.add(task_id, Try("failed" if n % 2 else "up_for_retry"))
        store.record_failed_try(FailedTry(DAG, RUN, task_id, -1, 1, "poison", "relation-not-found"))
    airflow.add("retried", Try("failed"))
    airflow.add("retried", Try("up_for_retry"))
    for number in (1, 2):
        store.record_failed_try(FailedTry(DAG, RUN, "retried", -1, number, "retryable", "http-5xx"))
    airflow.add("unrecorded", Try("failed"))
    airflow.add("oom", Try("failed", log=[KILLED_LINE]))
    store.record_failed_try(FailedTry(DAG, RUN, "oom", -1, 1, "infra", "killed"))
    done = _watcher(pg_dsn, airflow).round()
    assert done.read == 2 * 43  # listed in both streams (the stand-in answers both alike)
    assert sorted(unquote(match[2]) for path in airflow.asked if (match := TRIES.match(path))) == [
        "oom",
        "unrecorded",
    ]
    assert done.calls == len(airflow.asked)
    assert [outcome.category for outcome in done.recognised] == ["killed"]  # the final try's letter
    assert done.cpu_seconds > 0


def test_a_storm_larger_than_a_round_is_read_through_and_a_kill_at_its_end_is_found(
    pg_dsn, airflow, monkeypatch
):
    """650 task instances end within a minute, more than a round reads (two pages here) and all inside
    the overlap; the policy recorded every failure but the last, a kill. Each round goes on from where
    the last stopped, so the kill is recorded within a few rounds (rereading the overlap from a
    round's newest read would list the same first pages forever)."""
    monkeypatch.setattr(infra_watch, "MAX_PAGES", 2)
    store = DeadLetterStore.from_dsn(pg_dsn)
    start = datetime.now(timezone.utc) - timedelta(minutes=1)
    for n in range(650):
        task_id = f"storm_{n:03d}"
        ended = start + timedelta(milliseconds=90 * n)
        if n == 649:
            airflow.add(task_id, Try("failed", log=[KILLED_LINE], ended=ended))
            continue
        airflow.add(task_id, Try("failed", ended=ended))
        store.record_failed_try(FailedTry(DAG, RUN, task_id, -1, 1, "poison", "relation-not-found"))
    watcher = _watcher(pg_dsn, airflow)
    found = [outcome.category for _ in range(5) for outcome in watcher.round().recognised]
    assert found == ["killed"]
    assert _failed_tries(pg_dsn)[-1] == ("storm_649", 1, "infra", "killed", "worker-7")


def test_one_watcher_leads_at_a_time(pg_dsn):
    """The session lock: a second watcher's session cannot lead while the first holds it; it can after."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    with store.infra_watch_lead() as first:
        assert first()
        with store.infra_watch_lead() as second:
            assert not second()
    with store.infra_watch_lead() as third:
        assert third()


def test_the_sweeper_files_a_killed_task_as_infra_from_the_same_evidence(pg_dsn, airflow):
    """A failure the watcher missed: the sweeper reads the exit line and files infra/killed, not filed-by-sweeper."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    airflow.add("load", Try("failed", log=[KILLED_LINE]))
    ti = TaskInstanceRef(DAG, RUN, "load", -1, "failed", 1, max_tries=0)
    with airflow.api() as api:
        letter_id = _sweep_one(store, api, ti, {}, 3)
    (letter,) = _letters(pg_dsn)
    assert letter["id"] == letter_id
    assert (letter["failure_class"], letter["category"], letter["filed_by"]) == ("infra", "killed", "sweeper")
    assert _failed_tries(pg_dsn) == [("load", 1, "infra", "killed", "worker-7")]
