"""Sweep benchmark (issue 25): the REST calls one sweep makes at 10,000 open letters, beside its target.

A whole ``run_sweeper`` (file the failures no callback filed, sync the replaying letters, resolve
the letters whose task instance succeeded by hand, look up DAG versions, drain jobs) on a real
PostgreSQL, against a local Airflow REST API that counts every call and holds a long history: each
DAG has 100,000 successful task instances (what the old resolve paged through). Target: at most 2
calls per open letter. Starts its own PostgreSQL (or uses AIRFLOW_RETRY_PG_DSN) and stops what it
started. Run: ``.venv/bin/python bench/sweep.py``.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
import time
import uuid
from collections import Counter
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import psycopg
from verdict import check, exit_code, judge

from airflow_retry_provider.dlq.schema import apply_schema
from airflow_retry_provider.dlq.store import DeadLetterStore
from airflow_retry_provider.dlq.sweeper import run_sweeper
from airflow_retry_provider.hooks.airflow_api import AirflowApi, ApiCredentials

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))  # devstack: not in the wheel
from devstack.postgres import server_from_env_or_start  # noqa: E402

OPEN_LETTERS = 10_000
DAGS = 20
HISTORY_PER_DAG = 100_000  # successful task instances each DAG has ever had
SUCCEEDED_EVERY = 100  # one open letter in this many: its task instance succeeded since (cleared by hand)
TARGET_PER_LETTER = 2.0

_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)
_PARTS = _NAME.split(Path(__file__).with_name("sweep.sql").read_text("utf-8"))
BENCH_SQL = {name: body.strip().rstrip(";") for name, body in zip(_PARTS[1::2], _PARTS[2::2], strict=True)}

TI_PATH = re.compile(r"^/api/v2/dags/([^/]+)/dagRuns/([^/]+)/taskInstances/([^/]+)$")
LIST_PATH = re.compile(r"^/api/v2/dags/([^/]+)/dagRuns/~/taskInstances$")
VERSIONS_PATH = re.compile(r"^/api/v2/dags/([^/]+)/dagVersions$")


class CountingAirflow:
    """Answers the sweeper's calls from the seeded letters, counting each by kind."""

    def __init__(self, letters: list[tuple[str, str, str, str]]) -> None:
        self.calls: Counter[str] = Counter()
        self.states: dict[tuple[str, str, str], tuple[str, int]] = {}
        self.failed: dict[str, list[dict[str, Any]]] = {}
        for n, (dag_id, run_id, task_id, status) in enumerate(letters):
            if n % SUCCEEDED_EVERY == 0:
                state = ("success", 2)
            elif status == "replaying":
                state = ("running", 2)
            else:
                state = ("failed", 1)
            self.states[(dag_id, run_id, task_id)] = state
            if state[0] == "failed":
                self.failed.setdefault(dag_id, []).append(self._ti(dag_id, run_id, task_id, *state))
        self.expected_resolved = sum(1 for state, _ in self.states.values() if state == "success")
        self.lock = threading.Lock()

    @staticmethod
    def _ti(dag_id: str, run_id: str, task_id: str, state: str, try_number: int) -> dict[str, Any]:
        return {
            "dag_id": dag_id,
            "dag_run_id": run_id,
            "task_id": task_id,
            "map_index": -1,
            "state": state,
            "try_number": try_number,
            "end_date": "2026-11-01T00:00:00Z",
        }

    def answer(self, method: str, url: str) -> tuple[int, Any]:
        parts = urlsplit(url)
        path, params = parts.path, parse_qs(parts.query)
        kind, status, body = "other", 404, {"detail": "not served"}
        if method == "POST" and path == "/auth/token":
            kind, status, body = "sign-in", 201, {"access_token": "t0ken"}
        elif path == "/api/v2/dags":
            kind, status, body = "list DAGs", 200, {"dags": [{"dag_id": f"dag_{d}"} for d in range(DAGS)]}
        elif path.startswith("/api/v2/variables/"):
            kind = "variable"
        elif match := TI_PATH.match(path):
            key = (unquote(match[1]), unquote(match[2]), unquote(match[3]))
            kind = "one task instance"
            if key in self.states:
                status, body = 200, self._ti(*key, *self.states[key])
        elif match := LIST_PATH.match(path):
            state = params.get("state", [""])[0]
            kind = f"list task instances ({state})"
            offset, limit = int(params.get("offset", ["0"])[0]), int(params.get("limit", ["100"])[0])
            rows = self.failed.get(unquote(match[1]), []) if state == "failed" else []
            if state == "success":  # the history: as many as the DAG ever had, a page of them
                total = HISTORY_PER_DAG
                rows = [
                    self._ti(unquote(match[1]), f"old_{i}", "t", "success", 1)
                    for i in range(offset, min(total, offset + limit))
                ]
                offset = 0
            status, body = 200, {"task_instances": rows[offset : offset + limit]}
        elif match := VERSIONS_PATH.match(path):
            kind, status = "DAG versions", 200
            body = {
                "dag_versions": [
                    {
                        "id": str(uuid.uuid5(uuid.NAMESPACE_DNS, match[1])),
                        "version_number": 1,
                        "dag_id": unquote(match[1]),
                        "bundle_name": "dags-folder",
                        "bundle_version": None,
                        "created_at": "2026-10-01T00:00:00Z",
                    }
                ]
            }
        with self.lock:
            self.calls[kind] += 1
        return status, body


def serve(fake: CountingAirflow) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self, method: str) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, body = fake.answer(method, self.path)
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
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def bench_sweep(dsn: str) -> None:
    logging.getLogger("airflow_retry_provider").setLevel(
        logging.WARNING
    )  # the sweep's report: its ids, 10,000 of them
    with psycopg.connect(dsn) as conn:
        conn.execute(BENCH_SQL["seed_open_letters"], {"n": OPEN_LETTERS, "dags": DAGS})
        conn.execute(BENCH_SQL["seed_cleared_replays"])
        conn.commit()
        letters = [tuple(row) for row in conn.execute(BENCH_SQL["open_letters"]).fetchall()]
        before = dict(conn.execute(BENCH_SQL["count_by_status"]).fetchall())
    fake = CountingAirflow(letters)  # type: ignore[arg-type]
    server, url = serve(fake)
    store = DeadLetterStore.from_dsn(dsn)
    print(f"\n== one sweep at {len(letters):,} open letters ({before}) over {DAGS} DAGs,")
    print(f"   each DAG with {HISTORY_PER_DAG:,} successful task instances of history")
    try:
        for sweep in (1, 2):
            fake.calls.clear()
            api = AirflowApi(ApiCredentials(url, "admin", "admin"), timeout=30)
            started = time.perf_counter()
            report = run_sweeper(store, api, grace=timedelta(0), drain_seconds=0.0)
            elapsed = time.perf_counter() - started
            total = sum(fake.calls.values())
            per_letter = total / len(letters)
            print(f"\n  sweep {sweep}: {elapsed:.1f} s")
            for kind, count in sorted(fake.calls.items()):
                print(f"    {kind:<34} {count:>7,}")
            print(f"    {'REST calls in all':<34} {total:>7,}")
            verdict = judge(
                f"sweep {sweep}: <= {TARGET_PER_LETTER:g} REST calls per open letter",
                per_letter <= TARGET_PER_LETTER,
            )
            print(
                f"  REST calls per open letter {per_letter:.3f}   (target <= {TARGET_PER_LETTER:g}: {verdict})"
            )
            history = fake.calls["list task instances (success)"]
            print(
                f"  pages of the DAGs' success history read: {history}   "
                f"(must be 0: {check(f'sweep {sweep}: no page of a DAG history', history == 0)})"
            )
            if sweep == 1:
                resolved = len(report["resolved_in_dlq"]) + len(report["sync"]["resolved"])
                print(
                    f"  letters resolved (task instance succeeded) {resolved:,} of {fake.expected_resolved:,}   "
                    f"({check('every succeeded letter resolved', resolved == fake.expected_resolved)})"
                )
                letters = [letter for n, letter in enumerate(letters) if n % SUCCEEDED_EVERY != 0]
    finally:
        server.shutdown()
        server.server_close()


def main() -> int:
    started = time.perf_counter()
    server = server_from_env_or_start()
    name = f"arp_bench_sweep_{uuid.uuid4().hex[:8]}"
    try:
        dsn = server.create_database(name)
        with psycopg.connect(dsn) as conn:
            apply_schema(conn)
        print(f"PostgreSQL {server.host}:{server.port}, database {name}")
        bench_sweep(dsn)
    finally:
        try:
            server.drop_database(name)
        finally:
            server.stop()
    print(f"\ntotal {time.perf_counter() - started:.0f} s")
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
