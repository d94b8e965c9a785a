"""A local stand-in for Airflow's REST API that answers whatever a test tells it to, for fault injection.

It holds one DAG (``FAULT_DAG``) whose runs each have the tasks ``a`` and ``b`` (``b`` downstream of
``a``), and serves the calls the replay engine, the outcome sync and the sweeper make through the
real :class:`~airflow_retry_provider.hooks.airflow_api.AirflowApi`: sign-in, ``clearTaskInstances``
(``only_failed``, ``include_downstream``, ``prevent_running_task``, a note), one task instance,
task instances by state, the bulk list (``POST .../dagRuns/~/taskInstances/list``: its id lists,
states and ``end_date`` bounds, ordered by key or ``end_date``), one DAG run, DAGs by tag,
Variables (none). A clear behaves as Airflow
3.3's ``clear_task_instances``: the instance's state becomes none and its try number is kept; the
scheduler's next try (:meth:`FaultAirflow.start`) adds one.

Each call takes the next fault of :attr:`FaultAirflow.plan` (then ``"ok"``, or ``"500"`` while
:attr:`FaultAirflow.down`): ``409`` and ``500`` refuse without acting; ``act_500`` acts and answers
500; ``act_drop`` acts and closes the connection without an answer; ``timeout`` acts and answers
only after the client has given up. Every clear that reached it is kept in :attr:`FaultAirflow.clears`.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

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
    """A clear (not a dry run) that reached the fake: its task instance, the replay its note names, whether it acted."""

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
                    acted,
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


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection the fake closed on purpose (``act_drop``, ``timeout``) is no error."""


class _Handler(BaseHTTPRequestHandler):
    fake: FaultAirflow

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/auth/token":
            self._answer(201, {"access_token": "t0ken"})
            return
        body = json.loads(raw or b"{}")
        fault = self.fake.next_fault()
        if self.path == BATCH_PATH:  # a read: faults as a GET has them
            if fault in ("409", "500"):
                self._answer(int(fault), {"detail": f"injected {fault}"})
                return
            self._fail_after_acting(fault, 200, self.fake.batch(body))
            return
        if fault in ("409", "500"):
            if not body.get("dry_run", True):
                self.fake.record_clear(body, False, {})
            self._answer(int(fault), {"detail": f"injected {fault}"})
            return
        status, answer = self.fake.clear(body)
        if not body.get("dry_run", True):
            self.fake.record_clear(body, status == 200, answer)
        self._fail_after_acting(fault, status, answer)

    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/api/v2/version":  # asked once per client, before its first clear: no fault
            self._answer(200, {"version": "3.3.2", "git_version": None})
            return
        fault = self.fake.next_fault()
        if fault in ("409", "500"):
            self._answer(int(fault), {"detail": f"injected {fault}"})
            return
        parts = urlsplit(self.path)
        status, answer = self.fake.read(parts.path, parse_qs(parts.query))
        self._fail_after_acting(fault, status, answer)

    def _fail_after_acting(self, fault: str, status: int, answer: Any) -> None:
        if fault == "act_500":
            self._answer(500, {"detail": "injected 500 after acting"})
        elif fault == "act_drop":  # the answer is lost: the client sees the connection close
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        elif fault == "timeout":
            time.sleep(self.fake.client_timeout + 0.2)
            self.close_connection = True
        else:
            self._answer(status, answer)

    def _answer(self, status: int, body: Any) -> None:
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
def fault_airflow(client_timeout: float) -> Iterator[tuple[str, FaultAirflow]]:
    """The base URL of a local fake Airflow and its state; ``client_timeout`` is the clients' timeout (``timeout`` outlasts it)."""
    fake = FaultAirflow(client_timeout)
    handler = type("FaultHandler", (_Handler,), {"fake": fake})
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", fake
    finally:
        server.shutdown()
        server.server_close()
