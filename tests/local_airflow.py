"""One local stand-in for Airflow's REST API in the tests: a loopback server that the real
:class:`~airflow_retry_provider.hooks.airflow_api.AirflowApi` client talks to, configured by what
answers its calls (an :class:`Answerer`):

- :func:`refusing_airflow`: up and acting on nothing: it signs in, then answers every call 409
  (a command gets past its sign-in and every clear fails without reaching a real Airflow).
- :func:`answering_airflow` (:class:`AnsweringAirflow`): any DAG's task instances answer whatever
  state a test sets. Only what the replay loop calls: ``POST /auth/token``, ``GET`` one task
  instance, ``POST .../clearTaskInstances`` (which sets the cleared instances queued at the next
  try, after running the test's ``on_clear`` hook: something another process does while the clear
  is in flight; each body is kept in ``clears``; a ``keep_task_state`` sent to a 3.3 is a 422, as
  Airflow 3.3 answers it), the bulk list ``POST .../dagRuns/~/taskInstances/list`` (its id lists
  and states), ``GET .../dagVersions`` (``versions``: a DAG with none answers 404) and ``GET
  /api/v2/version`` (``version``, "3.3.2" unless a test sets it), and ``GET`` / ``PATCH`` one DAG
  run (``runs``: a run the test did not set answers 404; a ``PATCH`` updates the run, as a state
  ``queued`` does in Airflow). Every other path answers 404.
  ``calls`` counts the requests by kind. For a letter's impact (issue 48): ``GET .../tasks``
  (``tasks``: a DAG with none answers 404), ``GET .../dagRuns/~/taskInstances`` (``successes``: the
  successful task instances of a DAG, whatever the query) and ``GET /api/v2/assets`` (``assets``,
  whatever the query), in Airflow's shapes.
- :func:`fault_airflow` (:class:`FaultAirflow`): fault injection on one DAG (``FAULT_DAG``) whose
  runs each have the tasks ``a`` and ``b`` (``b`` downstream of ``a``); it serves the calls the
  replay engine, the outcome sync and the sweeper make: sign-in, ``clearTaskInstances``
  (``only_failed``, ``include_downstream``, ``prevent_running_task``, a note), one task instance,
  task instances by state, the bulk list (its id lists, states and ``end_date`` bounds, ordered by
  key or ``end_date``), one DAG run, DAGs by tag, Variables (none). A clear behaves as Airflow
  3.3's ``clear_task_instances``: the instance's state becomes none and its try number is kept;
  the scheduler's next try (:meth:`FaultAirflow.start`) adds one. Each call takes the next fault
  of :attr:`FaultAirflow.plan` (then ``"ok"``, or ``"500"`` while :attr:`FaultAirflow.down`):
  ``409`` and ``500`` refuse without acting; ``act_500`` acts and answers 500; ``act_drop`` acts
  and closes the connection without an answer; ``timeout`` acts and answers only after the client
  has given up. Every clear that reached it is kept in :attr:`FaultAirflow.clears`.

A new behaviour is a new :class:`Answerer`, served by :func:`serve`.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import parse_qs, unquote, urlsplit

from airflow_retry_provider.hooks.airflow_api import AirflowApi, ApiCredentials

BATCH_PATH = "/api/v2/dags/~/dagRuns/~/taskInstances/list"


@dataclass(frozen=True)
class Reply:
    """What the server does with one call: answer ``status`` and ``body``, or fail after acting.

    :param fault: ``ok`` (answer), ``act_500`` (answer 500 instead), ``act_drop`` (close the
        connection without an answer) or ``timeout`` (answer nothing until ``delay`` seconds passed).
    """

    status: int
    body: Any
    fault: str = "ok"
    delay: float = 0.0


class Answerer(Protocol):
    """The behaviour of a stand-in: one reply per call (``path`` with its query string)."""

    def answer(self, method: str, path: str, body: dict[str, Any]) -> Reply: ...


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection the stand-in closed on purpose (``act_drop``, ``timeout``) is no error."""


class _Handler(BaseHTTPRequestHandler):
    answerer: Answerer

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self._serve("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._serve("POST")

    def do_PATCH(self) -> None:  # noqa: N802
        self._serve("PATCH")

    def _serve(self, method: str) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        reply = self.answerer.answer(method, self.path, json.loads(raw) if raw else {})
        if reply.fault == "act_500":
            self._send(500, {"detail": "injected 500 after acting"})
        elif reply.fault == "act_drop":  # the answer is lost: the client sees the connection close
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        elif reply.fault == "timeout":
            time.sleep(reply.delay)
            self.close_connection = True
        else:
            self._send(reply.status, reply.body)

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client gave up (a timeout it was told to have)
            self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def serve(answerer: Answerer) -> Iterator[str]:
    """The base URL of a loopback server on a free port that ``answerer`` answers, for the block's duration."""
    handler = type("LocalAirflowHandler", (_Handler,), {"answerer": answerer})
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


# --------------------------------------------------------------------------- refusing


class _Refusing:
    def answer(self, method: str, path: str, body: dict[str, Any]) -> Reply:
        if method == "POST" and path == "/auth/token":
            return Reply(201, {"access_token": "t0ken"})
        return Reply(409, {"detail": "refused"})


@contextmanager
def refusing_airflow() -> Iterator[str]:
    """The base URL of a local server that signs in and then refuses every call with HTTP 409."""
    with serve(_Refusing()) as url:
        yield url


# --------------------------------------------------------------------------- answering

TI_PATH = re.compile(r"^/api/v2/dags/([^/]+)/dagRuns/([^/]+)/taskInstances/([^/?]+)(?:/(-?\d+))?$")
CLEAR_PATH = re.compile(r"^/api/v2/dags/([^/]+)/clearTaskInstances$")
VERSIONS_PATH = re.compile(r"^/api/v2/dags/([^/]+)/dagVersions$")
TASKS_PATH = re.compile(r"^/api/v2/dags/([^/]+)/tasks$")
TI_LIST_PATH = re.compile(r"^/api/v2/dags/([^/]+)/dagRuns/~/taskInstances$")
RUN_PATH = re.compile(r"^/api/v2/dags/([^/]+)/dagRuns/([^/~]+)$")

Key = tuple[str, str, str, int]


class AnsweringAirflow:
    """Any DAG's task instances, in whatever state a test sets (:func:`answering_airflow`)."""

    def __init__(self) -> None:
        self.instances: dict[Key, dict[str, Any]] = {}
        self.calls: Counter[str] = Counter()
        self.on_clear: Callable[[], None] | None = None
        self.clears: list[dict[str, Any]] = []
        self.versions: dict[str, list[dict[str, Any]]] = {}
        self.version = "3.3.2"
        self.tasks: dict[str, list[dict[str, Any]]] = {}
        self.successes: dict[str, list[dict[str, Any]]] = {}
        self.assets: list[dict[str, Any]] = []
        self.runs: dict[tuple[str, str], dict[str, Any]] = {}
        self.url = ""
        self.lock = threading.Lock()

    def set(
        self, dag_id: str, run_id: str, task_id: str, state: str | None, try_number: int, map_index: int = -1
    ) -> None:
        with self.lock:
            self.instances[(dag_id, run_id, task_id, map_index)] = {
                "dag_id": dag_id,
                "dag_run_id": run_id,
                "task_id": task_id,
                "map_index": map_index,
                "state": state,
                "try_number": try_number,
                "end_date": None,
            }

    def extract_then_publish(
        self, dag_id: str, delivery: dict[str, Any], extract_seconds: float, publish_seconds: float
    ) -> None:
        """``dag_id``: extract -> publish, publish delivering as ``delivery`` says (the param
        ``retry_provider_delivery``); each task's recent successes took the seconds given."""
        self.tasks[dag_id] = [
            {
                "task_id": "extract",
                "downstream_task_ids": ["publish"],
                "trigger_rule": "all_success",
                "params": {},
            },
            {
                "task_id": "publish",
                "downstream_task_ids": [],
                "trigger_rule": "all_success",
                "params": {"retry_provider_delivery": {"value": delivery, "source": "task"}},
            },
        ]
        self.successes[dag_id] = [
            {"task_id": "extract", "state": "success", "duration": extract_seconds},
            {"task_id": "publish", "state": "success", "duration": publish_seconds},
        ]

    def api(self) -> AirflowApi:
        return AirflowApi(ApiCredentials(self.url, "admin", "admin"), timeout=10)

    def answer(self, method: str, path: str, body: dict[str, Any]) -> Reply:
        """One call, as the instances set by the test say."""
        return Reply(*self._answer(method, path.split("?")[0], body))

    def _answer(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if method == "POST" and path == "/auth/token":
            return 201, {"access_token": "t0ken"}
        if method == "GET" and (match := TI_PATH.match(path)):
            self.calls["task_instance"] += 1
            dag_id, run_id, task_id = (unquote(part) for part in match.groups()[:3])
            key = (dag_id, run_id, task_id, int(match[4]) if match[4] else -1)
            with self.lock:
                found = self.instances.get(key)
            return (200, dict(found)) if found else (404, {"detail": "no such task instance"})
        if method == "GET" and path == "/api/v2/version":
            self.calls["version"] += 1
            return 200, {"version": self.version, "git_version": None}
        if method == "POST" and (match := CLEAR_PATH.match(path)):
            self.calls["clear"] += 1
            self.clears.append(dict(body))
            if "keep_task_state" in body and self.version.startswith("3.3."):
                return 422, {"detail": [{"type": "extra_forbidden", "loc": ["body", "keep_task_state"]}]}
            if self.on_clear is not None:
                self.on_clear()
            cleared = []
            with self.lock:
                for marker in body.get("task_ids", []):
                    task_id, map_index = (marker, -1) if isinstance(marker, str) else tuple(marker)
                    ti = self.instances.get((unquote(match[1]), body["dag_run_id"], task_id, map_index))
                    if ti is not None and ti["state"] in ("failed", "upstream_failed"):
                        if not body.get("dry_run"):
                            ti.update(state="queued", try_number=ti["try_number"] + 1)
                        cleared.append(dict(ti))
            return 200, {"task_instances": cleared, "total_entries": len(cleared)}
        if method == "POST" and path == BATCH_PATH:
            self.calls["task_instances_batch"] += 1
            with self.lock:
                found = [
                    dict(ti)
                    for _, ti in sorted(self.instances.items())
                    if ti["dag_id"] in body.get("dag_ids", [ti["dag_id"]])
                    and ti["dag_run_id"] in body.get("dag_run_ids", [ti["dag_run_id"]])
                    and ti["task_id"] in body.get("task_ids", [ti["task_id"]])
                    and ti["state"] in body.get("state", [ti["state"]])
                ]
            offset, limit = int(body.get("page_offset", 0)), int(body.get("page_limit", 100))
            return 200, {"task_instances": found[offset : offset + limit], "total_entries": len(found)}
        if method == "GET" and (match := VERSIONS_PATH.match(path)):
            self.calls["dag_versions"] += 1
            return _of_a_dag(self.versions.get(unquote(match[1])), "dag_versions")
        if method == "GET" and (match := TASKS_PATH.match(path)):
            self.calls["tasks"] += 1
            return _of_a_dag(self.tasks.get(unquote(match[1])), "tasks")
        if method == "GET" and (match := TI_LIST_PATH.match(path)):
            self.calls["task_instances"] += 1
            found = self.successes.get(unquote(match[1]), [])
            return 200, {"task_instances": found, "total_entries": len(found)}
        if method == "GET" and path == "/api/v2/assets":
            self.calls["assets"] += 1
            return 200, {"assets": self.assets, "total_entries": len(self.assets)}
        if method in ("GET", "PATCH") and (match := RUN_PATH.match(path)):
            self.calls["dag_run" if method == "GET" else "patch_dag_run"] += 1
            with self.lock:
                run = self.runs.get((unquote(match[1]), unquote(match[2])))
                if run is None:
                    return 404, {"detail": "no such DAG run"}
                run.update(body if method == "PATCH" else {})
                return 200, dict(run)
        self.calls["other"] += 1
        return 404, {"detail": f"not served here: {method} {path}"}


def _of_a_dag(found: list[dict[str, Any]] | None, name: str) -> tuple[int, dict[str, Any]]:
    """A DAG's list as Airflow answers it; None (a DAG the test did not set): 404."""
    if found is None:
        return 404, {"detail": "no such DAG"}
    return 200, {name: found, "total_entries": len(found)}


@contextmanager
def answering_airflow() -> Iterator[AnsweringAirflow]:
    """A running :class:`AnsweringAirflow` on a free loopback port (its ``url``)."""
    fake = AnsweringAirflow()
    with serve(fake) as fake.url:
        yield fake


# --------------------------------------------------------------------------- fault injection

FAULT_DAG = "model"
TASKS = ("a", "b")
DOWNSTREAM = {"a": ("b",), "b": ()}
FAULTS = ("ok", "409", "500", "act_500", "act_drop", "timeout")
CLEARABLE = ("failed", "upstream_failed")
UNFINISHED = (None, "running")
BATCH_PATH = "/api/v2/dags/~/dagRuns/~/taskInstances/list"
NOTE_REPLAY = re.compile(r"airflow-retry replay #(\d+) ")


@dataclass
class TaskInstance:
    """One task instance as the fake Airflow keeps it."""

    run_id: str
    task_id: str
    state: str | None
    try_number: int = 1
    end_date: datetime | None = None
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "dag_id": FAULT_DAG,
            "dag_run_id": self.run_id,
            "task_id": self.task_id,
            "map_index": -1,
            "state": self.state,
            "try_number": self.try_number,
            "max_tries": self.try_number,
            "end_date": self.end_date.isoformat() if self.end_date else None,
            "note": self.note,
        }


@dataclass(frozen=True)
class ClearRequest:
    """A clear (not a dry run) that reached the fake: its task instance, the replay its note names, whether it acted
    (cleared at least one task instance: a 200 that cleared none, as Airflow answers for a task instance no longer
    failed, changed nothing)."""

    run_id: str
    task_id: str
    replay_id: int | None
    acted: bool
    cleared: tuple[tuple[str, str], ...]


@dataclass
class FaultAirflow:
    """The fake's state; every method takes the lock (the server answers from its own threads)."""

    client_timeout: float
    tis: dict[tuple[str, str], TaskInstance] = field(default_factory=dict)
    plan: list[str] = field(default_factory=list)
    down: bool = False
    clears: list[ClearRequest] = field(default_factory=list)
    versions: list[dict[str, Any]] = field(default_factory=list)  # GET .../dagVersions of FAULT_DAG
    version_reads: list[str] = field(default_factory=list)  # the DAG of each GET .../dagVersions, in order
    lock: threading.RLock = field(default_factory=threading.RLock)

    def answer(self, method: str, path: str, body: dict[str, Any]) -> Reply:
        """One call, after the next fault of :attr:`plan` (sign-in and the version never fail)."""
        if method == "POST" and path == "/auth/token":
            return Reply(201, {"access_token": "t0ken"})
        if method == "GET" and path == "/api/v2/version":  # asked once per client, before its first clear
            return Reply(200, {"version": "3.3.2", "git_version": None})
        fault = self.next_fault()
        refused = Reply(int(fault), {"detail": f"injected {fault}"}) if fault in ("409", "500") else None
        if method == "GET":
            if refused:
                return refused
            parts = urlsplit(path)
            return self._after(fault, *self.read(parts.path, parse_qs(parts.query)))
        if path == BATCH_PATH:  # a read: faults as a GET has them
            return refused or self._after(fault, 200, self.batch(body))
        if refused:
            if not body.get("dry_run", True):
                self.record_clear(body, False, {})
            return refused
        status, answer = self.clear(body)
        if not body.get("dry_run", True):
            self.record_clear(body, status == 200, answer)
        return self._after(fault, status, answer)

    def _after(self, fault: str, status: int, answer: Any) -> Reply:
        return Reply(status, answer, fault, delay=self.client_timeout + 0.2)

    def reset(self) -> None:
        with self.lock:
            self.tis.clear()
            self.plan.clear()
            self.clears.clear()
            self.down = False

    def add_run(self, run_id: str, states: dict[str, str]) -> None:
        """A DAG run whose tasks ended in ``states`` at try 1."""
        with self.lock:
            now = datetime.now(timezone.utc)
            for task_id in TASKS:
                state = states[task_id]
                self.tis[(run_id, task_id)] = TaskInstance(run_id, task_id, state, 1, now)

    def delete_run(self, run_id: str) -> None:
        """The run is deleted from Airflow: its task instances answer 404 from now on."""
        with self.lock:
            for task_id in TASKS:
                self.tis.pop((run_id, task_id), None)

    def start(self, run_id: str, task_id: str) -> TaskInstance:
        """The scheduler starts the next try of a cleared task instance (try number + 1)."""
        with self.lock:
            ti = self.tis[(run_id, task_id)]
            if ti.state is None:
                ti.state, ti.try_number, ti.end_date = "running", ti.try_number + 1, None
            return ti

    def end(self, run_id: str, task_id: str, state: str) -> TaskInstance:
        """The task instance's try ends in ``state`` (started first if it was only cleared)."""
        with self.lock:
            ti = self.start(run_id, task_id)
            ti.state, ti.end_date = state, datetime.now(timezone.utc)
            return ti

    def mark(self, run_id: str, task_id: str, state: str) -> TaskInstance:
        """A person sets the state by hand in Airflow's UI: the try number stays."""
        with self.lock:
            ti = self.tis[(run_id, task_id)]
            ti.state, ti.end_date = state, datetime.now(timezone.utc)
            return ti

    def age(self, by: timedelta) -> None:
        """Time passes: every try ended ``by`` earlier."""
        with self.lock:
            for ti in self.tis.values():
                if ti.end_date is not None:
                    ti.end_date -= by

    def next_fault(self) -> str:
        with self.lock:
            if self.plan:
                return self.plan.pop(0)
            return "500" if self.down else "ok"

    def clear(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """``clearTaskInstances`` as Airflow answers it (before any fault)."""
        run_id = str(body["dag_run_id"])
        (task_id,) = body["task_ids"]
        with self.lock:
            root = self.tis.get((run_id, task_id))
            if root is None:
                return 404, {"detail": f"DAG run {run_id} not found"}
            wanted = [task_id, *(DOWNSTREAM[task_id] if body.get("include_downstream") else ())]
            chosen = [self.tis[(run_id, t)] for t in wanted if (run_id, t) in self.tis]
            if body.get("only_failed"):
                chosen = [ti for ti in chosen if ti.state in CLEARABLE]
            if body.get("prevent_running_task") and any(ti.state == "running" for ti in chosen):
                return 409, {"detail": "AirflowClearRunningTaskException"}
            answer = [ti.to_json() for ti in chosen]
            if not body.get("dry_run", True):
                for ti in chosen:
                    ti.state, ti.end_date, ti.note = None, None, body.get("note")
            return 200, {"task_instances": answer, "total_entries": len(answer)}

    def record_clear(self, body: dict[str, Any], acted: bool, answer: dict[str, Any]) -> None:
        found = NOTE_REPLAY.match(str(body.get("note") or ""))
        cleared = tuple(
            (str(ti["dag_run_id"]), str(ti["task_id"])) for ti in answer.get("task_instances", [])
        )
        with self.lock:
            self.clears.append(
                ClearRequest(
                    str(body["dag_run_id"]),
                    str(body["task_ids"][0]),
                    int(found.group(1)) if found else None,
                    acted and bool(cleared),
                    cleared if acted else (),
                )
            )

    def read(self, path: str, query: dict[str, list[str]]) -> tuple[int, Any]:
        """The GET calls, as Airflow answers them."""
        parts = [unquote(p) for p in path.strip("/").split("/")]
        with self.lock:
            if parts == ["api", "v2", "dags"]:
                return 200, {"dags": [{"dag_id": FAULT_DAG}], "total_entries": 1}
            if parts[:3] == ["api", "v2", "variables"]:
                return 404, {"detail": "variable not found"}
            if parts[:3] == ["api", "v2", "dags"] and parts[4:] == ["dagVersions"]:
                self.version_reads.append(parts[3])
            if parts == ["api", "v2", "dags", FAULT_DAG, "dagVersions"]:
                return 200, {"dag_versions": list(self.versions), "total_entries": len(self.versions)}
            if len(parts) < 6 or parts[:3] != ["api", "v2", "dags"] or parts[3] != FAULT_DAG:
                return 404, {"detail": f"no route {path}"}
            run_id = parts[5]
            if len(parts) == 6:
                if not any(key[0] == run_id for key in self.tis):
                    return 404, {"detail": f"DAG run {run_id} not found"}
                return 200, {"dag_run_id": run_id, "data_interval_start": None, "data_interval_end": None}
            if run_id == "~" and len(parts) == 7:
                return 200, self._listing(query)
            ti = self.tis.get((run_id, parts[7])) if len(parts) == 8 else None
            if ti is None:
                return 404, {"detail": "task instance not found"}
            return 200, ti.to_json()

    def _listing(self, query: dict[str, list[str]]) -> dict[str, Any]:
        state = query.get("state", [None])[0]
        after = query.get("end_date_gte", [None])[0]
        since = datetime.fromisoformat(after) if after else None
        found = [
            ti
            for _, ti in sorted(self.tis.items())
            if ti.state == state and (since is None or (ti.end_date is not None and ti.end_date >= since))
        ]
        offset, limit = int(query.get("offset", ["0"])[0]), int(query.get("limit", ["100"])[0])
        page = found[offset : offset + limit]
        return {"task_instances": [ti.to_json() for ti in page], "total_entries": len(found)}

    def batch(self, body: dict[str, Any]) -> dict[str, Any]:
        """``POST /api/v2/dags/~/dagRuns/~/taskInstances/list`` as Airflow answers it (each list an ``IN``)."""

        def bound(name: str) -> datetime | None:
            return datetime.fromisoformat(body[name]) if body.get(name) else None

        after, before = bound("end_date_gte"), bound("end_date_lte")
        with self.lock:
            found = [
                ti
                for _, ti in sorted(self.tis.items())
                if FAULT_DAG in body.get("dag_ids", [FAULT_DAG])
                and ti.run_id in body.get("dag_run_ids", [ti.run_id])
                and ti.task_id in body.get("task_ids", [ti.task_id])
                and ti.state in body.get("state", [ti.state])
                and (after is None or (ti.end_date is not None and ti.end_date >= after))
                and (before is None or (ti.end_date is not None and ti.end_date <= before))
            ]
            if body.get("order_by") == "end_date":
                found.sort(key=lambda ti: ti.end_date or datetime.min.replace(tzinfo=timezone.utc))
            offset, limit = int(body.get("page_offset", 0)), int(body.get("page_limit", 100))
            page = found[offset : offset + limit]
            return {"task_instances": [ti.to_json() for ti in page], "total_entries": len(found)}


@contextmanager
def fault_airflow(client_timeout: float) -> Iterator[tuple[str, FaultAirflow]]:
    """The base URL of a local fake Airflow and its state; ``client_timeout`` is the clients' timeout (``timeout`` outlasts it)."""
    fake = FaultAirflow(client_timeout)
    with serve(fake) as url:
        yield url, fake
