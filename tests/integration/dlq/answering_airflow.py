"""A local Airflow REST API for fault injection: its task instances answer whatever state a test sets.

Only what the replay loop calls: ``POST /auth/token``, ``GET`` one task instance, ``POST
.../clearTaskInstances`` (which sets the cleared instances queued at the next try, after running the
test's ``on_clear`` hook: something another process does while the clear is in flight; each body is
kept in ``clears``; a ``keep_task_state`` sent to a 3.3 is a 422, as Airflow 3.3 answers it), the
bulk list ``POST .../dagRuns/~/taskInstances/list`` (its id lists and states), ``GET
.../dagVersions`` (``versions``: a DAG with none answers 404) and ``GET /api/v2/version``
(``version``, "3.3.2" unless a test sets it). Every other path answers 404. ``calls`` counts the
requests by kind. For a letter's impact (issue 48): ``GET .../tasks`` (``tasks``: a DAG with none
answers 404), ``GET .../dagRuns/~/taskInstances`` (``successes``: the successful task instances of
a DAG, whatever the query) and ``GET /api/v2/assets`` (``assets``, whatever the query), in Airflow's shapes.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

from airflow_retry_provider.hooks.airflow_api import AirflowApi, ApiCredentials

TI_PATH = re.compile(r"^/api/v2/dags/([^/]+)/dagRuns/([^/]+)/taskInstances/([^/?]+)(?:/(-?\d+))?$")
CLEAR_PATH = re.compile(r"^/api/v2/dags/([^/]+)/clearTaskInstances$")
BATCH_PATH = "/api/v2/dags/~/dagRuns/~/taskInstances/list"
VERSIONS_PATH = re.compile(r"^/api/v2/dags/([^/]+)/dagVersions$")
TASKS_PATH = re.compile(r"^/api/v2/dags/([^/]+)/tasks$")
TI_LIST_PATH = re.compile(r"^/api/v2/dags/([^/]+)/dagRuns/~/taskInstances$")
RUN_PATH = re.compile(r"^/api/v2/dags/([^/]+)/dagRuns/([^/~]+)$")

Key = tuple[str, str, str, int]


class AnsweringAirflow:
    """The state of each task instance, as the fake answers it."""

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

    def api(self) -> AirflowApi:
        return AirflowApi(ApiCredentials(self.url, "admin", "admin"), timeout=10)

    def answer(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
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
            found = self.versions.get(unquote(match[1]))
            if found is None:
                return 404, {"detail": "no such DAG"}
            return 200, {"dag_versions": found, "total_entries": len(found)}
        if method == "GET" and (match := TASKS_PATH.match(path)):
            self.calls["tasks"] += 1
            tasks = self.tasks.get(unquote(match[1]))
            if tasks is None:
                return 404, {"detail": "no such DAG"}
            return 200, {"tasks": tasks, "total_entries": len(tasks)}
        if method == "GET" and (match := TI_LIST_PATH.match(path)):
            self.calls["task_instances"] += 1
            found = self.successes.get(unquote(match[1]), [])
            return 200, {"task_instances": found, "total_entries": len(found)}
        if method == "GET" and path == "/api/v2/assets":
            self.calls["assets"] += 1
            return 200, {"assets": self.assets, "total_entries": len(self.assets)}
        if (
            method == "GET"
            and (match := RUN_PATH.match(path))
            and (unquote(match[1]), unquote(match[2])) in self.runs
        ):
            self.calls["dag_run"] += 1
            return 200, dict(self.runs[(unquote(match[1]), unquote(match[2]))])
        self.calls["other"] += 1
        return 404, {"detail": f"not served here: {method} {path}"}


@contextmanager
def answering_airflow() -> Iterator[AnsweringAirflow]:
    """A running :class:`AnsweringAirflow` on a free loopback port."""
    fake = AnsweringAirflow()

    class Handler(BaseHTTPRequestHandler):
        def _serve(self, method: str) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, body = fake.answer(method, self.path.split("?")[0], json.loads(raw) if raw else {})
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            self._serve("GET")

        def do_POST(self) -> None:  # noqa: N802
            self._serve("POST")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
