"""Replay benchmark: the deployment's pace held by concurrent drivers, time to the first clear, driver overhead.

Three replay jobs are driven by three driver processes at once against a real PostgreSQL (its own
throwaway cluster, or AIRFLOW_RETRY_PG_DSN). Airflow's clear endpoint is stood in for by a local
HTTP server that answers at once, so the figures are the provider's own: the pace machinery
(advisory lock, window count, claim) and the driver, not Airflow's clear. Prints each figure with
its target and OK/MISSED. Run: ``.venv/bin/python bench/replay.py [--seconds 300] [--rate 30]``.

Then the canary (issue 29 item 4), one driver: a job of a 500-letter root-cause group whose fix
does not work (its canary's task fails again, as its failure callback files it) and how many clears
and replay-cap counts it spends (target 1, 500 without the canary); and a group of 500 whose fix
works, at the configured pace (``--rate``): the time from the canary's success to the last clear,
beside its anchor measured in the same run, the same 500 letters replayed without a canary (first
to last clear: the pace alone); the rising pace's steps cost the difference (at most 120 s). At
30/min that half takes about 19 minutes, nearly all of it waiting (the anchor runs beside it, in a
database of its own). ``--part pace|canary`` runs one half.
"""

from __future__ import annotations

import argparse
import http.server
import json
import multiprocessing
import sys
import threading
import time
import uuid
from dataclasses import replace
from typing import Any

import psycopg
from dlq import LETTER  # bench/dlq.py: the benchmarks' one letter (it also puts tools/ on sys.path)

from airflow_retry_provider import metrics
from airflow_retry_provider.dlq.driver import ReplayDriver
from airflow_retry_provider.dlq.replay import ReplayEngine, ReplayRequest
from airflow_retry_provider.dlq.schema import apply_schema
from airflow_retry_provider.dlq.store import DeadLetterStore, JobStore
from airflow_retry_provider.hooks.airflow_api import AirflowApi, ApiCredentials
from devstack.postgres import server_from_env_or_start  # noqa: E402

JOBS = 3
DRIVERS = 3
WINDOW_SQL = """
SELECT max(n) FROM (
    SELECT count(*) OVER (ORDER BY clear_sent_at RANGE BETWEEN CURRENT ROW AND interval '59.999 seconds' FOLLOWING) AS n
    FROM retry_replays WHERE clear_sent_at IS NOT NULL
) w
"""


class FakeClears(http.server.BaseHTTPRequestHandler):
    """Answers POST /auth/token and clearTaskInstances at once, as Airflow would for one failed task."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        if self.path == "/auth/token":
            answer: dict = {"access_token": "bench"}
        else:
            dag_id = self.path.split("/")[4]
            answer = {
                "task_instances": [
                    {
                        "dag_id": dag_id,
                        "dag_run_id": body["dag_run_id"],
                        "task_id": task,
                        "map_index": -1,
                        "state": "failed",
                        "try_number": 1,
                    }
                    for task in body["task_ids"]
                ]
            }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def drive(dsn: str, url: str, rate: int, seconds: float, ready: Any, out: multiprocessing.Queue) -> None:
    """One driver process: look for jobs every 0.2 s until ``deadline`` (monotonic, machine-wide).

    Reports the letters it did and the time spent on them outside the pace's sleeps.
    """
    slept = [0.0]

    def sleep(s: float) -> None:
        slept[0] += s
        time.sleep(s)

    metrics._stats()  # Airflow's Stats is imported once per process, as in a long-lived driver
    ready.release()
    engine = ReplayEngine(DeadLetterStore.from_dsn(dsn), replay_cap=3, rate_per_minute=rate, sleep=sleep)
    driver = ReplayDriver(engine, lambda: AirflowApi(ApiCredentials(url, "bench", "bench")))
    spent = {"claim": [0, 0.0], "clear": [0, 0.0]}

    def timed(name: str, call):  # type: ignore[no-untyped-def]
        def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
            began = time.monotonic()
            try:
                return call(*args, **kwargs)
            finally:
                spent[name][0] += 1
                spent[name][1] += time.monotonic() - began

        return wrapper

    engine.claim_paced = timed("claim", engine.claim_paced)  # type: ignore[method-assign]
    engine.clear = timed("clear", engine.clear)  # type: ignore[method-assign]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not driver.drain(deadline=deadline):
            time.sleep(0.2)
    out.put(spent)


def canary_figures(dsn: str, anchor_dsn: str, url: str, rate: int) -> bool:
    """Attempts spent on a failing fix, and canary-success-to-last-clear beside the pace alone (groups of 500).

    The anchor, the same group replayed without a canary, runs at the same time in a database of
    its own (a deployment of its own: the pace is per database), so both take one wait.
    """
    group = 500

    def job_of(store: DeadLetterStore, run_id: str, reason: str, canary: bool = True) -> int:
        filed = [store.file(replace(LETTER, task_id=f"t{n}", run_id=run_id), 3) for n in range(group)]
        letters = [store.get(f.letter_id) for f in filed]
        return JobStore(store.db).create(
            ReplayRequest("bench", reason, "v2", source="api"), letters, canary=canary
        )

    def driver(of: str, run_id: str, failed: bool) -> ReplayDriver:
        store = DeadLetterStore.from_dsn(of)

        def settle() -> None:  # the replayed tasks end: their callbacks say how
            with psycopg.connect(of) as conn:
                rows = conn.execute(
                    "SELECT task_id FROM retry_dead_letters WHERE run_id = %s AND status = 'replaying'",
                    (run_id,),
                ).fetchall()
            for (task_id,) in rows:
                if failed:
                    store.file(replace(LETTER, task_id=task_id, run_id=run_id, try_number=2), 3)
                else:
                    store.resolve_replaying(LETTER.dag_id, run_id, task_id, -1, source="callback")

        def sleep(s: float) -> None:  # the callbacks run meanwhile, within the nap the driver asked for
            began = time.monotonic()
            settle()
            time.sleep(max(0.0, min(s, 0.5) - (time.monotonic() - began)))

        api = lambda: AirflowApi(ApiCredentials(url, "bench", "bench"))  # noqa: E731
        engine = ReplayEngine(store, api(), replay_cap=3, rate_per_minute=rate, sleep=sleep)
        return ReplayDriver(engine, api, canary_poll=0.05)

    def seconds(of: str, sql: str, job_id: int) -> float:
        with psycopg.connect(of) as conn:
            (value,) = conn.execute(sql, (job_id,)).fetchone()
        return float(value)

    store, anchor_store = DeadLetterStore.from_dsn(dsn), DeadLetterStore.from_dsn(anchor_dsn)
    failing = job_of(store, "broken", "a fix that does not work")
    driver(dsn, "broken", failed=True).run_job(failing)
    with psycopg.connect(dsn) as conn:
        (clears,) = conn.execute(
            "SELECT count(*) FROM retry_replays WHERE job_id = %s AND clear_sent_at IS NOT NULL", (failing,)
        ).fetchone()
        (counted,) = conn.execute(
            "SELECT sum(replay_count) FROM retry_dead_letters WHERE run_id = 'broken'"
        ).fetchone()
    spared = clears == 1 and counted == 1
    print(
        f"attempts spent on a failing fix, group of {group}: {clears} clear(s), {counted} replay-cap count(s) "
        f"(target 1; {group} without the canary) {'OK' if spared else 'MISSED'}",
        flush=True,
    )
    working = job_of(store, "fixed", "the fix")
    plain = job_of(anchor_store, "plain", "the fix, no canary", canary=False)
    anchor = threading.Thread(target=driver(anchor_dsn, "plain", failed=False).run_job, args=(plain,))
    anchor.start()
    driver(dsn, "fixed", failed=False).run_job(working)
    anchor.join()
    after_canary = seconds(
        dsn,
        "SELECT extract(epoch FROM max(r.clear_sent_at) - j.paced_since) FROM retry_replays r"
        " JOIN retry_replay_jobs j ON j.id = r.job_id WHERE j.id = %s GROUP BY j.paced_since",
        working,
    )
    alone = seconds(
        anchor_dsn,
        "SELECT extract(epoch FROM max(clear_sent_at) - min(clear_sent_at)) FROM retry_replays WHERE job_id = %s",
        plain,
    )
    steps = after_canary - alone
    print(
        f"canary's success -> last clear, group of {group} at {rate}/min: {after_canary:.1f} s; "
        f"its anchor, the same group without a canary, first -> last clear: {alone:.1f} s "
        f"(the pace alone, {group - 1} gaps at {rate}/min: {(group - 1) * 60 / rate:.1f} s); "
        f"the steps, one at 1/min and five at 5/min, add {steps:.1f} s (target at most 120 s) "
        f"{'OK' if steps <= 120 else 'MISSED'}",
        flush=True,
    )
    return spared and steps <= 120


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--rate", type=int, default=30)
    parser.add_argument("--part", choices=("pace", "canary", "all"), default="all")
    args = parser.parse_args()
    server = server_from_env_or_start()
    name = f"arp_bench_replay_{uuid.uuid4().hex[:8]}"
    dsn = server.create_database(name)
    anchor_dsn = server.create_database(f"{name}_anchor")
    fake = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeClears)
    serving = multiprocessing.Process(target=fake.serve_forever, daemon=True)  # its own process, its own GIL
    serving.start()
    url = f"http://127.0.0.1:{fake.server_address[1]}"
    try:
        for each in (dsn, anchor_dsn):
            with psycopg.connect(each) as conn:
                apply_schema(conn)
        if args.part == "canary":
            return 0 if canary_figures(dsn, anchor_dsn, url, args.rate) else 1
        store = DeadLetterStore.from_dsn(dsn)
        per_job = int(args.rate * args.seconds / 60 / JOBS) + args.rate
        jobs = JobStore(store.db)
        batches: list[list] = []
        for j in range(JOBS):
            filed = [
                store.file(replace(LETTER, task_id=f"t{n}", run_id=f"job{j}"), 3) for n in range(per_job)
            ]
            batches.append([store.get(f.letter_id) for f in filed])
        queue: multiprocessing.Queue = multiprocessing.Queue()
        ready = multiprocessing.Semaphore(0)
        procs = [
            multiprocessing.Process(target=drive, args=(dsn, url, args.rate, args.seconds + 1, ready, queue))
            for _ in range(DRIVERS)
        ]
        for proc in procs:
            proc.start()
        for _ in procs:
            ready.acquire()  # the drivers are up and idle, as in a running deployment
        time.sleep(0.5)
        for j, letters in enumerate(batches):
            jobs.create(ReplayRequest("bench", f"job {j}", "v1", source="api"), letters)
        reports = [queue.get() for _ in procs]
        for proc in procs:
            proc.join()
        with psycopg.connect(dsn) as conn:
            first, last, total = conn.execute(
                "SELECT min(clear_sent_at), max(clear_sent_at), count(*) FROM retry_replays"
                " WHERE clear_sent_at IS NOT NULL"
            ).fetchone()
            (max_window,) = conn.execute(WINDOW_SQL).fetchone()
            (to_first,) = conn.execute(
                "SELECT extract(epoch FROM %s - min(created_at)) FROM retry_replay_jobs", (first,)
            ).fetchone()
        claims = sum(r["claim"][0] for r in reports)
        claim_ms = sum(r["claim"][1] for r in reports) / max(claims, 1) * 1000
        clears = sum(r["clear"][0] for r in reports)
        clear_ms = sum(r["clear"][1] for r in reports) / max(clears, 1) * 1000
        per_minute = (total - 1) * 60 / (last - first).total_seconds() if total > 1 else 0.0
        within = abs(per_minute - args.rate) <= 0.05 * args.rate
        print(f"{JOBS} jobs, {DRIVERS} driver processes, pace {args.rate}/min, {args.seconds:.0f} s")
        print(
            f"clears per minute held: {per_minute:.2f} (target within 5% of {args.rate}) "
            f"{'OK' if within else 'MISSED'}"
        )
        print(
            f"most clears in any 60 s: {max_window} (target <= {args.rate}) "
            f"{'OK' if max_window <= args.rate else 'MISSED'}"
        )
        print(
            f"job created -> first clear: {float(to_first) * 1000:.1f} ms "
            "(idle drivers look every 0.2 s; the api-server's driver is woken by POST /api/replays)"
        )
        print(
            f"driver overhead per letter: pace check + claim {claim_ms:.1f} ms a call ({claims} calls, "
            f"waits included as checks), clear + records {clear_ms:.1f} ms ({clears} clears, HTTP to a local stand-in)"
        )
        spared = args.part == "pace" or canary_figures(dsn, anchor_dsn, url, args.rate)
        return 0 if within and max_window <= args.rate and spared else 1
    finally:
        serving.kill()
        fake.server_close()
        server.drop_database(name)
        server.drop_database(f"{name}_anchor")
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
