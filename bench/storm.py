"""Storm benchmark: a storm of mapped poison failures with the provider, beside the same storm without it,
in one stack (issue 58).

Starts PostgreSQL and one Airflow (LocalExecutor, parallelism 16; scheduler, dag-processor, api-server
with two workers, triggerer; every process holds the API connection ``retry_provider_airflow_api``, as
the docs advise for the sweeper) on ``bench/storm_dags/``, and a local SMTP server the alerts go to. Two
DAGs map ``--tasks`` task instances that fail at once with one poison cause (a relation not found),
upstream of a task that delivers:

1. ``storm_native``: native Airflow, ``retries=0``, no provider in the DAG file;
2. ``storm_provider``: the same under ``apply_profile(..., "report")`` (dead letters at once), the
   delivering task with a ``DeliveryDeadline``.

Each runs ``--rounds`` times, alternating. While a run lasts, a sampler asks Airflow's own UI endpoint
``GET /api/v2/dags`` every half second and reads the provider database's connections
(``pg_stat_activity``). Printed for each side: the time from the first failure (the failing tries
start and raise at once) to the last task ended and to the last letter filed, the provider's REST
reads per letter (the impact thread's log lines: their reads, over the letters), the p95 of ``GET
/api/v2/dags`` during the storm, the peak of the provider database's connections, and the mails sent.
Targets: at most one REST call per 20 letters of a DAG run, and ``GET /api/v2/dags`` p95 within 10 %
of the native storm's.

``--executor celery`` runs the same on the CeleryExecutor with Redis (two workers of concurrency 8: the
same 16 slots).

Run: ``.venv/bin/python bench/storm.py [--tasks 200] [--rounds 1] [--executor celery]``.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from stacks import MAIL_NOTIFIER, bench_stack
from verdict import check, exit_code, judge

DAGS = Path(__file__).resolve().parent / "storm_dags"
VARIANTS = {"native": "storm_native", "provider": "storm_provider"}
READS = re.compile(r"impact of (\d+) letter\(s\) of (\d+) DAG run\(s\) computed with (\d+) REST read\(s\)")
SAMPLE_EVERY = 0.5
READS_PER_LETTER_TARGET = 1 / 20
P95_TARGET = 1.10


@dataclass
class Sampler:
    """Asks ``GET /api/v2/dags`` and counts the provider database's connections every half second."""

    stack: Any
    provider_dsn: str
    latencies: list[float] = field(default_factory=list)
    connections: list[int] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        import httpx
        import psycopg

        headers = {"Authorization": f"Bearer {self.stack.token()}"}
        dbname = self.provider_dsn.rsplit("/", 1)[1]
        with (
            httpx.Client(base_url=self.stack.base_url, timeout=30) as client,
            psycopg.connect(self.provider_dsn, autocommit=True) as conn,
        ):
            while not self._stop.is_set():
                started = time.perf_counter()
                client.get("/api/v2/dags", params={"limit": 25}, headers=headers).raise_for_status()
                self.latencies.append(time.perf_counter() - started)
                (count,) = conn.execute(
                    "SELECT count(*) - 1 FROM pg_stat_activity WHERE datname = %s", (dbname,)
                ).fetchone()  # less the sampler's own
                self.connections.append(int(count))
                self._stop.wait(SAMPLE_EVERY)

    def __enter__(self) -> Sampler:
        self._thread = threading.Thread(target=self.run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


@dataclass(frozen=True)
class Storm:
    """What one run of one variant measured."""

    variant: str
    to_last_end: float
    to_last_letter: float | None
    letters: int
    impacts: int
    reads: int
    p95_ms: float
    peak_connections: int
    mails: int


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 2 else (values[0] if values else 0.0)


def one_storm(bench: Any, smtp: Any, variant: str, timeout: float) -> Storm:
    """Trigger ``variant``'s DAG, sample until its run ended and its impacts are computed."""
    import psycopg

    stack, dag_id = bench.stack, VARIANTS[variant]
    log_path = stack.home / "stack-logs" / "api-server.log"
    log_from = log_path.stat().st_size if log_path.exists() else 0
    mails_before = len(smtp.subjects())
    with Sampler(stack, bench.provider_dsn) as sampler:
        run = stack.api(
            "POST",
            f"/api/v2/dags/{dag_id}/dagRuns",
            json={"logical_date": datetime.now(timezone.utc).isoformat()},
        )
        stack.wait_for_run(dag_id, run["dag_run_id"], timeout=timeout)
        until = time.monotonic() + 120
        while variant == "provider" and time.monotonic() < until:
            with psycopg.connect(bench.provider_dsn) as conn:
                (awaiting,) = conn.execute(
                    "SELECT count(*) FROM retry_impact_queue q JOIN retry_dead_letters l ON l.id = q.letter_id "
                    "WHERE l.dag_id = %s AND q.gave_up_at IS NULL",
                    (dag_id,),
                ).fetchone()
            if not awaiting:
                break
            time.sleep(0.5)
        time.sleep(2)  # the at-risk mail leaves after the impact is stored
    with psycopg.connect(bench.metadata_dsn) as conn:
        first, last_end = conn.execute(
            "SELECT min(start_date), max(end_date) FROM task_instance "
            "WHERE dag_id = %s AND run_id = %s AND task_id = 'load'",
            (dag_id, run["dag_run_id"]),
        ).fetchone()
    with psycopg.connect(bench.provider_dsn) as conn:
        letters, last_letter, impacts = conn.execute(
            "SELECT count(*), max(l.created_at), count(i.letter_id) FROM retry_dead_letters l "
            "LEFT JOIN retry_letter_impacts i ON i.letter_id = l.id WHERE l.dag_id = %s AND l.run_id = %s",
            (dag_id, run["dag_run_id"]),
        ).fetchone()
    log = log_path.read_text(errors="replace")[log_from:] if log_path.exists() else ""
    reads = sum(int(match[2]) for match in READS.findall(log))
    return Storm(
        variant=variant,
        to_last_end=(last_end - first).total_seconds(),
        to_last_letter=(last_letter - first).total_seconds() if last_letter else None,
        letters=int(letters),
        impacts=int(impacts),
        reads=reads,
        p95_ms=p95(sampler.latencies) * 1000,
        peak_connections=max(sampler.connections, default=0),
        mails=len(smtp.subjects()) - mails_before,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200, help="mapped task instances failing at once")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each variant, alternating")
    parser.add_argument(
        "--executor",
        choices=("local", "celery"),
        default="local",
        help="celery: two workers of concurrency 8",
    )
    args = parser.parse_args()
    if args.tasks < 1 or args.rounds < 1:
        parser.error(f"--tasks and --rounds must be >= 1, got {args.tasks} and {args.rounds}")

    from devstack.smtp import SmtpSink

    smtp = SmtpSink().start()
    storms: list[Storm] = []
    try:
        env = {
            "BENCH_TASKS": str(args.tasks),
            "AIRFLOW__API__WORKERS": "2",
            "AIRFLOW_CONN_SMTP_ALERTS": smtp.connection_json(),
            "AIRFLOW__RETRY_PROVIDER__ALERT_NOTIFIERS": json.dumps([MAIL_NOTIFIER]),
        }
        shape = {"celery_workers": 2, "worker_concurrency": 8}
        with bench_stack(
            "storm", args.executor, DAGS, list(VARIANTS.values()), env, celery_shape=shape
        ) as bench:
            print(
                f"executor: {args.executor}; parallelism 16; {', '.join(bench.stack.components())}",
                flush=True,
            )
            for number in range(1, args.rounds + 1):
                for variant in VARIANTS:
                    storm = one_storm(bench, smtp, variant, timeout=1800)
                    storms.append(storm)
                    print(f"  round {number} {variant:<9} {storm}", flush=True)
    finally:
        smtp.stop()

    def mean(variant: str, name: str) -> float:
        values = [getattr(s, name) for s in storms if s.variant == variant and getattr(s, name) is not None]
        return statistics.fmean(values) if values else float("nan")

    print()
    print(f"{args.tasks} mapped tasks failing at once, one poison cause; mean of {args.rounds} run(s) each")
    print(f"  {'':<46}{'native':>12}{'provider':>12}")
    rows = [
        ("first failure -> last task ended (s)", "to_last_end", "{:.1f}"),
        ("first failure -> last letter filed (s)", "to_last_letter", "{:.1f}"),
        ("letters filed", "letters", "{:.0f}"),
        ("impacts computed", "impacts", "{:.0f}"),
        ("REST reads of the provider", "reads", "{:.0f}"),
        ("GET /api/v2/dags p95 during the storm (ms)", "p95_ms", "{:.0f}"),
        ("peak connections to the provider database", "peak_connections", "{:.0f}"),
        ("mails sent", "mails", "{:.0f}"),
    ]
    for label, name, shape in rows:
        native, ours = mean("native", name), mean("provider", name)
        cells = [shape.format(v) if v == v else "-" for v in (native, ours)]
        print(f"  {label:<46}{cells[0]:>12}{cells[1]:>12}")
    ours = [s for s in storms if s.variant == "provider"]
    per_letter = sum(s.reads for s in ours) / max(1, sum(s.letters for s in ours))
    print(
        f"  REST calls per letter {per_letter:.3f}   target <= {READS_PER_LETTER_TARGET:.3f} (one per 20)   "
        f"{judge('REST calls per letter', per_letter <= READS_PER_LETTER_TARGET)}"
    )
    ratio = mean("provider", "p95_ms") / max(mean("native", "p95_ms"), 1e-9)
    print(
        f"  GET /api/v2/dags p95 {ratio:.2f}x the native storm's   target <= {P95_TARGET:.2f}x   "
        f"{judge('UI p95 within 10 %', ratio <= P95_TARGET)}"
    )
    every = all(s.letters == args.tasks and s.impacts == args.tasks for s in ours)
    print(f"  every failure filed, every impact computed: {check('every letter and impact', every)}")
    told = bool(ours) and ours[0].mails == 2  # later rounds: the same root cause and delivery, told already
    print(f"  one new-root-cause and one at-risk mail for the first storm: {check('two mails', told)}")
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
