"""Breaker benchmark: one outage of a partner service, held by the breaker, burnt without it (issue 28).

Starts PostgreSQL and one Airflow (LocalExecutor, parallelism 16) on ``bench/breaker_dags/``, a
local HTTP service the tasks call, and a local SMTP server the alerts go to (the real
``SmtpNotifier``). Every variant is 4 DAGs mapping ``--tasks`` reads each (100 task instances by
default) on the dependency ``bench_partner`` (a pool of 16), triggered together:

0. anchor: the breaker's DAGs with the service up: the drain of the work with no outage;
1. with the breaker (``apply_profile`` + ``apply_capacity`` with ``breaker:``);
2. without it (``apply_profile`` only: the same profile, about 10 s of retries);
3. Airflow's native retries (the same tries and delays, no provider).

For 1-3 the service answers 503 for ``--outage`` seconds from its first call, then 200. Printed
per variant: tries spent (failed tries, and calls that reached the service), tasks that failed,
dead letters, alerts (dependency-down / dependency-recovered / others, from the outbox), probes,
and the time from the recovery until every run ended. Targets (issue 28), with the breaker: at
most one failed try per task per outage plus its probes, no letter, exactly one down and one
recovered alert, the drain after recovery <= 1.5x the anchor's drain, and the last held task
started within 30 s of the breaker's close (issue 43: it waits for the next probe, not a cool-down).

Run: ``.venv/bin/python bench/breaker.py [--tasks 25] [--outage 60]``.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections import Counter
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from stacks import MAIL_NOTIFIER, bench_stack
from verdict import check, exit_code, judge

DAGS = Path(__file__).resolve().parent / "breaker_dags"
POOL = "bench_partner"
PER_VARIANT = 4
VARIANTS = {
    "anchor": ("on", "no outage: the breaker's DAGs, the service up"),
    "breaker": ("on", "with the breaker"),
    "profile": ("off", "without it: apply_profile only"),
    "native": ("native", "Airflow's native retries"),
}
TARGET_DRAIN_RATIO = 1.5

TARGET_AFTER_CLOSE_S = 30
LETTERS_SQL = "SELECT count(*) FROM retry_dead_letters WHERE dag_id = ANY(%(dag_ids)s)"
ALERTS_SQL = "SELECT kind, count(*) FROM retry_alerts WHERE id > %(after)s GROUP BY kind"
LAST_ALERT_SQL = "SELECT coalesce(max(id), 0) FROM retry_alerts"
PROBES_SQL = """
SELECT count(*) FROM retry_breaker_events
WHERE dependency = %(dependency)s AND to_status = 'half-open' AND at >= %(since)s
"""
CLOSED_SQL = """
SELECT max(at) FROM retry_breaker_events
WHERE dependency = %(dependency)s AND to_status = 'closed' AND at >= %(since)s
"""


class PartnerService:
    """Answers 503 for ``outage`` seconds from the first call after ``arm(outage)``, then 200; counts calls."""

    def __init__(self) -> None:
        self.outage = 0.0
        self.down_until = 0.0  # wall clock
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                dag_id = self.path.strip("/").split("/")[0]
                with service.lock:
                    service.calls[dag_id] += 1
                    if service.outage and not service.down_until:
                        service.down_until = time.time() + service.outage
                    down = time.time() < service.down_until
                self.send_response(503 if down else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def arm(self, outage: float) -> None:
        with self.lock:
            self.outage, self.down_until = outage, 0.0

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _when(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


def run_variant(
    bench: Any, partner: PartnerService, name: str, outage: float, timeout: float
) -> dict[str, Any]:
    """Trigger the variant's 4 DAGs at once, wait for every run, and count what it spent."""
    import psycopg

    from devstack.metadata import run_task_instances

    kind = VARIANTS[name][0]
    dag_ids = [f"breaker_bench_{kind}_{n}" for n in range(PER_VARIANT)]
    with psycopg.connect(bench.provider_dsn) as conn:
        last_alert = conn.execute(LAST_ALERT_SQL).fetchone()[0]
        letters_before = conn.execute(LETTERS_SQL, {"dag_ids": dag_ids}).fetchone()[0]
    partner.arm(outage if name != "anchor" else 0.0)
    calls_before = sum(partner.calls[d] for d in dag_ids)
    since = datetime.now(timezone.utc)
    runs = [
        bench.stack.api("POST", f"/api/v2/dags/{dag_id}/dagRuns", json={"logical_date": None})
        for dag_id in dag_ids
    ]
    ended = [bench.stack.wait_for_run(r["dag_id"], r["dag_run_id"], timeout=timeout) for r in runs]
    with psycopg.connect(bench.metadata_dsn) as conn:  # the live try of each, on 3.3's schema or 3.4's
        rows = [row for r in runs for row in run_task_instances(conn, r["dag_id"], r["dag_run_id"])]
    tis = [(row["task_id"], row["map_index"], row["state"], int(row["try_number"])) for row in rows]
    with psycopg.connect(bench.provider_dsn) as conn:
        letters = conn.execute(LETTERS_SQL, {"dag_ids": dag_ids}).fetchone()[0] - letters_before
        alerts = dict(conn.execute(ALERTS_SQL, {"after": last_alert}).fetchall())
        probes = conn.execute(PROBES_SQL, {"dependency": POOL, "since": since}).fetchone()[0]
        closed_at = conn.execute(CLOSED_SQL, {"dependency": POOL, "since": since}).fetchone()[0]
    # the last read to start (its live try's start: after its last hold) against the breaker's close
    starts = [row["start_date"] for row in rows if row["start_date"] is not None]
    after_close = (max(starts) - closed_at).total_seconds() if closed_at and starts else None
    last_end = max(_when(r["end_date"]) for r in ended)
    start = min(_when(r["queued_at"]) for r in ended)
    failed_tries = [
        (t - 1 if state == "success" else t) for _, _, state, t in tis
    ]  # a successful try is the work, not spent
    return {
        "name": name,
        "tasks": len(tis),
        "succeeded": sum(1 for _, _, state, _ in tis if state == "success"),
        "failed_tasks": sum(1 for _, _, state, _ in tis if state != "success"),
        "failed_tries": sum(failed_tries),
        "max_failed_tries": max(failed_tries, default=0),
        "tries": sum(t for *_, t in tis),
        "calls": sum(partner.calls[d] for d in dag_ids) - calls_before,
        "letters": int(letters),
        "down": int(alerts.pop("dependency-down", 0)),
        "recovered": int(alerts.pop("dependency-recovered", 0)),
        "other_alerts": int(sum(alerts.values())),
        "probes": int(probes),
        "drain": last_end - start,
        "after_recovery": last_end - partner.down_until if partner.down_until else None,
        "last_start_after_close": after_close,
        "runs": [r["state"] for r in ended],
    }


def report(results: dict[str, dict[str, Any]], tasks: int, outage: float) -> list[str]:
    anchor = results["anchor"]["drain"]
    lines = [
        f"{PER_VARIANT} DAGs x {tasks} mapped reads = {PER_VARIANT * tasks} task instances on one dependency "
        f"(pool of 16, parallelism 16, LocalExecutor); outage: 503 for {outage:.0f} s, then 200; "
        "retries: 4 tries, 2 s then 4 s apart (about 10 s of budget)",
        f"  {'variant':<40} {'failed tries':>12} {'max/task':>8} {'calls':>6} {'failed':>6} {'letters':>7} "
        f"{'down':>4} {'recov':>5} {'other':>5} {'probes':>6} {'drain after recovery':>21}",
    ]
    for name, result in results.items():
        after = result["after_recovery"]
        shown = f"{result['drain']:.0f} s (whole run)" if after is None else f"{after:.0f} s"
        lines.append(
            f"  {VARIANTS[name][1]:<40} {result['failed_tries']:>12} {result['max_failed_tries']:>8} "
            f"{result['calls']:>6} {result['failed_tasks']:>6} {result['letters']:>7} {result['down']:>4} "
            f"{result['recovered']:>5} {result['other_alerts']:>5} {result['probes']:>6} {shown:>21}"
        )
    on = results["breaker"]
    lines += [
        "",
        "  targets with the breaker (issue 28):",
        f"    every task succeeded ({on['succeeded']}/{on['tasks']}): {check('breaker: every task succeeded', on['succeeded'] == on['tasks'])}",
        f"    failed tries <= one per task + the probes ({on['failed_tries']} <= {on['tasks']} + {on['probes']}): "
        + judge("breaker: failed tries", on["failed_tries"] <= on["tasks"] + on["probes"]),
        f"    no letter (outage {outage:.0f} s < max_hold 900 s): {on['letters']} {check('breaker: no letter', on['letters'] == 0)}",
        f"    exactly one dependency-down and one dependency-recovered alert: {on['down']} / {on['recovered']} "
        + check("breaker: one down, one recovered alert", (on["down"], on["recovered"]) == (1, 1)),
        f"    drain after recovery {on['after_recovery']:.0f} s <= {TARGET_DRAIN_RATIO}x the no-outage drain "
        f"{anchor:.0f} s ({on['after_recovery'] / anchor:.2f}x): "
        + judge("breaker: drain after recovery", on["after_recovery"] <= TARGET_DRAIN_RATIO * anchor),
    ]
    after_close = on.get("last_start_after_close")
    if after_close is not None:  # held tasks wait for the next probe, not a cool-down of their own (#43)
        lines.append(
            f"    the last held task started {after_close:.0f} s after the breaker closed "
            f"(<= {TARGET_AFTER_CLOSE_S} s): "
            + judge("breaker: start after the close", after_close <= TARGET_AFTER_CLOSE_S)
        )
    off, native = results["profile"], results["native"]
    lines.append(
        f"  the same outage without the breaker: {off['letters']} letters, {off['failed_tries']} failed tries, "
        f"{off['failed_tasks']} failed tasks (apply_profile); {native['failed_tries']} failed tries, "
        f"{native['failed_tasks']} failed tasks, no letters filed (native retries)"
    )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tasks", type=int, default=25, help="mapped task instances per DAG (4 DAGs a variant)"
    )
    parser.add_argument("--outage", type=float, default=60, help="seconds the service answers 503")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds to wait for one run")
    args = parser.parse_args()
    if args.tasks < 1 or args.outage <= 0:
        parser.error(
            f"--tasks must be >= 1 and --outage > 0, got --tasks {args.tasks} --outage {args.outage}"
        )

    import json

    from devstack.smtp import SmtpSink

    partner = PartnerService()
    smtp = SmtpSink().start()
    try:
        with bench_stack(
            "breaker",
            "local",
            DAGS,
            [f"breaker_bench_{kind}_{n}" for kind in ("on", "off", "native") for n in range(PER_VARIANT)],
            {
                "BENCH_TASKS": str(args.tasks),
                "BENCH_PARTNER_URL": partner.url,
                "AIRFLOW__CORE__PARALLELISM": "16",
                "AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG": "16",
                "AIRFLOW_CONN_SMTP_ALERTS": smtp.connection_json(),
                "AIRFLOW__RETRY_PROVIDER__ALERT_NOTIFIERS": json.dumps([MAIL_NOTIFIER]),
            },
            celery_shape={},
        ) as bench:
            bench.stack.api(
                "POST",
                "/api/v2/pools",
                json={"name": POOL, "slots": 16, "description": "the partner API", "include_deferred": False},
            )
            print(f"executor: local; parallelism 16; {', '.join(bench.stack.components())}", flush=True)
            results = {}
            for name in VARIANTS:
                results[name] = run_variant(bench, partner, name, args.outage, args.timeout)
                print(f"  {name}: {results[name]}", flush=True)
            print()
            for line in report(results, args.tasks, args.outage):
                print(line)
            print(f"  mails received by the SMTP server: {smtp.subjects()}")
    finally:
        smtp.stop()
        partner.close()
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
