"""Sweep benchmark (issues 25, 46): what one sweep costs at 100,000 open letters, beside today's one-call-per-letter sweep.

A whole ``run_sweeper`` (file the failures no callback filed, decide the replaying letters, resolve
the letters at rest whose task instance succeeded by hand, look up DAG versions, drain jobs) on a
real PostgreSQL, against a local Airflow REST API that counts every call and holds a long history:
each DAG has 100,000 successful task instances (what the old resolve paged through). The anchor,
in the same run on the same state, is the sweep before issue 46 (``tests/one_by_one.py``'s ``check_one_by_one``: one call per
open letter, each DAG's failures listed). Then the batched sweep: a first sweep (no watermark
yet), one when nothing changed, one after 1,000 task instances changed (their letters' tasks
succeeded). Targets (issue 46): nothing changed <= 200 calls; 1,000 changed <= 1,500 calls and
<= 60 s; every changed letter resolved. Starts its own PostgreSQL (or uses AIRFLOW_RETRY_PG_DSN)
and stops what it started. Run: ``.venv/bin/python bench/sweep.py [--open N] [--dags N] [--changed N]``.
"""

from __future__ import annotations

import argparse
import bisect
import json
import logging
import re
import sys
import threading
import time
import uuid
from collections import Counter
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import psycopg
from verdict import check, exit_code, judge

from airflow_retry_provider.dlq.schema import apply_schema
from airflow_retry_provider.dlq.store import DeadLetterStore
from airflow_retry_provider.dlq.sweeper import (
    managed_dag_ids,
    notice_fixes,
    number_versions,
    run_sweeper,
)
from airflow_retry_provider.dlq.sync import OutcomeSync
from airflow_retry_provider.hooks.airflow_api import AirflowApi, ApiCredentials

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))  # devstack: not in the wheel
from devstack.postgres import server_from_env_or_start  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.one_by_one: the sweep before issue 46
from tests.one_by_one import check_one_by_one  # noqa: E402

OPEN_LETTERS = 100_000  # 80,000 dlq, 10,000 parked, 10,000 replaying
DAGS = 50
CHANGED = 1_000
HISTORY_PER_DAG = 100_000  # successful task instances each DAG has ever had
MAX_PAGES = 150  # [retry_provider] sweep_max_pages's default
TARGET_NOTHING_CHANGED = 200
TARGET_CHANGED_CALLS = 1_500
TARGET_CHANGED_SECONDS = 60.0

_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)
_PARTS = _NAME.split(Path(__file__).with_name("sweep.sql").read_text("utf-8"))
BENCH_SQL = {name: body.strip().rstrip(";") for name, body in zip(_PARTS[1::2], _PARTS[2::2], strict=True)}

TI_PATH = re.compile(r"^/api/v2/dags/([^/]+)/dagRuns/([^/]+)/taskInstances/([^/]+)$")
LIST_PATH = re.compile(r"^/api/v2/dags/([^/]+)/dagRuns/~/taskInstances$")
BATCH_PATH = "/api/v2/dags/~/dagRuns/~/taskInstances/list"
VERSIONS_PATH = re.compile(r"^/api/v2/dags/([^/]+)/dagVersions$")

Key = tuple[str, str, str]


class CountingAirflow:
    """Answers the sweeper's calls from the seeded letters' task instances and a long history, counting each by kind.

    A letter's task instance failed 20 days ago (``replaying``: running at try 2). Each DAG's history
    is ``HISTORY_PER_DAG`` successful task instances (runs ``old_<i>``), one a minute, the newest 11
    days ago: the old resolve paged through it, a watermark never reaches it.
    """

    def __init__(self, letters: list[tuple[str, str, str, str]], dags: int) -> None:
        self.calls: Counter[str] = Counter()
        self.dags = dags
        self.now = datetime.now(timezone.utc)
        self.history_start = self.now - timedelta(days=11) - timedelta(minutes=HISTORY_PER_DAG)
        failed_at = self.now - timedelta(days=20)
        self.tis: dict[Key, dict[str, Any]] = {}
        for dag_id, run_id, task_id, status in letters:
            if status == "replaying":
                self.tis[(dag_id, run_id, task_id)] = self._ti(dag_id, run_id, task_id, "running", 2, None)
            else:
                self.tis[(dag_id, run_id, task_id)] = self._ti(
                    dag_id, run_id, task_id, "failed", 1, failed_at
                )
        self.ended: list[tuple[str, Key]] = []  # (end_date, key) of every ended task instance, sorted
        self._index()
        self.lock = threading.Lock()

    def _index(self) -> None:
        self.ended = sorted((ti["end_date"], key) for key, ti in self.tis.items() if ti["end_date"])

    @staticmethod
    def _ti(
        dag_id: str, run_id: str, task_id: str, state: str, try_number: int, ended: datetime | None
    ) -> dict[str, Any]:
        return {
            "dag_id": dag_id,
            "dag_run_id": run_id,
            "task_id": task_id,
            "map_index": -1,
            "state": state,
            "try_number": try_number,
            "end_date": ended.isoformat() if ended else None,
        }

    def succeed(self, keys: list[Key]) -> None:
        """These task instances were cleared by hand and succeeded just now (try 2)."""
        with self.lock:
            for key in keys:
                self.tis[key] = self._ti(*key, "success", 2, datetime.now(timezone.utc))
            self._index()

    def _history(self, dag_id: str, index: int) -> dict[str, Any]:
        ended = self.history_start + timedelta(minutes=index)
        return self._ti(dag_id, f"old_{index}", "t", "success", 1, ended)

    def batch(self, body: dict[str, Any]) -> dict[str, Any]:
        """The bulk list: each list an ``IN``, ``end_date`` bounds, ordered by id or end_date, a page."""
        dag_ids = body.get("dag_ids")
        states = set(body.get("state") or []) or None
        after = datetime.fromisoformat(body["end_date_gte"]) if body.get("end_date_gte") else None
        offset, limit = int(body.get("page_offset", 0)), min(100, int(body.get("page_limit", 100)))
        if body.get("dag_run_ids") is not None:  # by letters: the runs x tasks of one request
            keys = [
                (dag_id, run_id, task_id)
                for dag_id in dag_ids or []
                for run_id in body["dag_run_ids"]
                for task_id in body.get("task_ids") or ["t"]
            ]
            rows = [self.tis[key] for key in keys if key in self.tis]
        else:  # the stream: what ended since ``after`` (the history, then the letters' tasks)
            start = bisect.bisect_left(self.ended, ((after or self.history_start).isoformat(),))
            rows = [self.tis[key] for _, key in self.ended[start:] if dag_ids is None or key[0] in dag_ids]
            if after is None or after <= self.history_start + timedelta(minutes=HISTORY_PER_DAG):
                first = max(0, int((after - self.history_start).total_seconds() // 60)) if after else 0
                history = [
                    self._history(dag_id, i)
                    for i in range(first, min(HISTORY_PER_DAG, first + offset + limit))
                    for dag_id in dag_ids or [f"dag_{d}" for d in range(self.dags)]
                ]
                rows = history + rows
        rows = [row for row in rows if (states is None or row["state"] in states)]
        rows = [
            row for row in rows if after is None or (row["end_date"] and row["end_date"] >= after.isoformat())
        ]
        return {"task_instances": rows[offset : offset + limit], "total_entries": len(rows)}

    def answer(self, method: str, url: str, body: dict[str, Any]) -> tuple[int, Any]:
        parts = urlsplit(url)
        path, params = parts.path, parse_qs(parts.query)
        kind, status, answer = "other", 404, {"detail": "not served"}
        if method == "POST" and path == "/auth/token":
            kind, status, answer = "sign-in", 201, {"access_token": "t0ken"}
        elif method == "POST" and path == BATCH_PATH:
            kind = "bulk list of task instances"
            with self.lock:
                status, answer = 200, self.batch(body)
        elif path == "/api/v2/dags":
            kind, status = "list DAGs", 200
            answer = {"dags": [{"dag_id": f"dag_{d}"} for d in range(self.dags)]}
        elif path.startswith("/api/v2/variables/"):
            kind = "variable"
        elif match := TI_PATH.match(path):
            key = (unquote(match[1]), unquote(match[2]), unquote(match[3]))
            kind = "one task instance"
            with self.lock:
                if key in self.tis:
                    status, answer = 200, self.tis[key]
        elif match := LIST_PATH.match(path):
            state = params.get("state", [""])[0]
            kind = f"list task instances ({state})"
            offset, limit = int(params.get("offset", ["0"])[0]), int(params.get("limit", ["100"])[0])
            dag_id = unquote(match[1])
            if state == "success":  # the history: as many as the DAG ever had, a page of them
                rows = [self._history(dag_id, i) for i in range(offset, min(HISTORY_PER_DAG, offset + limit))]
            else:
                with self.lock:
                    rows = [ti for ti in self.tis.values() if ti["dag_id"] == dag_id and ti["state"] == state]
                rows = rows[offset : offset + limit]
            status, answer = 200, {"task_instances": rows}
        elif match := VERSIONS_PATH.match(path):
            kind, status = "DAG versions", 200
            answer = {
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
        return status, answer


def serve(fake: CountingAirflow) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self, method: str) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, body = fake.answer(method, self.path, json.loads(raw) if raw else {})
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


def anchor_sweep(store: DeadLetterStore, api: AirflowApi) -> None:
    """The sweep before issue 46, as ``run_sweeper`` ran it (no job to drain here)."""
    with api, store.db.pinned() as db:
        pinned = DeadLetterStore(db)
        outcomes = OutcomeSync(pinned, api, replay_cap=3)
        check_one_by_one(outcomes, managed_dag_ids(api), grace=timedelta(0))
        number_versions(pinned, api)
        notice_fixes(pinned, api)


def measured(fake: CountingAirflow, label: str, run: Any) -> tuple[int, float, Any]:
    fake.calls.clear()
    started = time.perf_counter()
    result = run()
    elapsed = time.perf_counter() - started
    total = sum(fake.calls.values())
    print(f"\n  {label}: {total:,} REST calls, {elapsed:.1f} s")
    for kind, count in sorted(fake.calls.items()):
        print(f"    {kind:<34} {count:>7,}")
    return total, elapsed, result


def bench_sweep(dsn: str, open_letters: int, dags: int, changed: int) -> None:
    logging.getLogger("airflow_retry_provider").setLevel(logging.ERROR)  # the sweep's report: its ids
    with psycopg.connect(dsn) as conn:
        conn.execute(BENCH_SQL["seed_open_letters"], {"n": open_letters, "dags": dags})
        conn.execute(BENCH_SQL["seed_cleared_replays"])
        conn.commit()
        letters = [tuple(row) for row in conn.execute(BENCH_SQL["open_letters"]).fetchall()]
        before = dict(conn.execute(BENCH_SQL["count_by_status"]).fetchall())
    fake = CountingAirflow(letters, dags)  # type: ignore[arg-type]
    server, url = serve(fake)
    store = DeadLetterStore.from_dsn(dsn)

    def api() -> AirflowApi:
        return AirflowApi(ApiCredentials(url, "admin", "admin"), timeout=60)

    def batched() -> dict[str, Any]:
        return run_sweeper(store, api(), grace=timedelta(0), drain_seconds=0.0, max_pages=MAX_PAGES)

    print(f"\n== {len(letters):,} open letters ({before}) over {dags} DAGs,")
    print(
        f"   each DAG with {HISTORY_PER_DAG:,} successful task instances of history; sweep_max_pages {MAX_PAGES}"
    )
    try:
        anchor_calls, anchor_seconds, _ = measured(
            fake,
            "anchor: one call per open letter (the sweep before issue 46)",
            lambda: anchor_sweep(store, api()),
        )
        measured(fake, "batched, first sweep (no watermark yet: reads its 7-day lookback)", batched)
        calm_calls, calm_seconds, calm = measured(fake, "batched, nothing changed", batched)
        rest = [letter for letter in letters if letter[3] != "replaying"]
        step = max(1, len(rest) // changed)
        moved = [letter[:3] for letter in rest[::step][:changed]]
        fake.succeed(moved)  # type: ignore[arg-type]
        busy_calls, busy_seconds, busy = measured(
            fake, f"batched, {len(moved):,} task instances changed", batched
        )
        behind = calm["behind"]
        print("\n  sweep                        REST calls   seconds   anchor: REST calls, seconds")
        print(
            f"  {'nothing changed':<26} {calm_calls:>12,} {calm_seconds:>9.1f}   {anchor_calls:,}, {anchor_seconds:.1f}"
        )
        print(
            f"  {f'{len(moved):,} changed':<26} {busy_calls:>12,} {busy_seconds:>9.1f}   {anchor_calls:,}, {anchor_seconds:.1f}"
        )
        print(
            f"  behind after the calm sweep: {behind['pages']} pages of {behind['max_pages']} read, "
            f"{behind['letters_unchecked']:,} letters at rest not yet checked in this full pass, "
            f"the oldest check {behind['oldest_check_age_seconds']:.0f} s ago"
        )
        print(
            f"  nothing changed: {calm_calls:,} calls   (target <= {TARGET_NOTHING_CHANGED}: "
            f"{judge('nothing changed: <= 200 REST calls', calm_calls <= TARGET_NOTHING_CHANGED)})"
        )
        print(
            f"  {len(moved):,} changed: {busy_calls:,} calls   (target <= {TARGET_CHANGED_CALLS:,}: "
            f"{judge('1,000 changed: <= 1,500 REST calls', busy_calls <= TARGET_CHANGED_CALLS)})"
        )
        print(
            f"  {len(moved):,} changed: {busy_seconds:.1f} s   (target <= {TARGET_CHANGED_SECONDS:g} s: "
            f"{judge('1,000 changed: <= 60 s', busy_seconds <= TARGET_CHANGED_SECONDS)})"
        )
        history = fake.calls["list task instances (success)"]
        print(
            f"  pages of a DAG's success history read: {history}   (must be 0: {check('no page of a DAG history', history == 0)})"
        )
        with psycopg.connect(dsn) as conn:
            resolved = conn.execute(BENCH_SQL["count_resolved"]).fetchone()[0]
        print(
            f"  letters resolved (task instance succeeded) {resolved:,} of {len(moved):,}   "
            f"({check('every changed letter resolved', resolved == len(moved))})"
        )
        print(
            f"  the anchor's calls per sweep grow with the backlog ({anchor_calls / len(letters):.3f} per open letter), changed or not"
        )
        del busy
    finally:
        server.shutdown()
        server.server_close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--open", type=int, default=OPEN_LETTERS, help="open letters (default %(default)s)")
    parser.add_argument(
        "--dags", type=int, default=DAGS, help="DAGs they are spread over (default %(default)s)"
    )
    parser.add_argument(
        "--changed", type=int, default=CHANGED, help="task instances that change (default %(default)s)"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    server = server_from_env_or_start()
    name = f"arp_bench_sweep_{uuid.uuid4().hex[:8]}"
    try:
        dsn = server.create_database(name)
        with psycopg.connect(dsn) as conn:
            apply_schema(conn)
        print(f"PostgreSQL {server.host}:{server.port}, database {name}")
        bench_sweep(dsn, args.open, args.dags, args.changed)
    finally:
        try:
            server.drop_database(name)
        finally:
            server.stop()
    print(f"\ntotal {time.perf_counter() - started:.0f} s")
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
