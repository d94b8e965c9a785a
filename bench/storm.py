"""Storm benchmark: a storm of poison failures with the provider, beside the same storm without it, in
one stack (issue 58).

Starts PostgreSQL and one Airflow (LocalExecutor, parallelism 16; scheduler, dag-processor, api-server
with two workers, triggerer; every process holds the API connection ``retry_provider_airflow_api``, as
the docs advise for the sweeper) on ``bench/storm_dags/``, and a local SMTP server the alerts go to. A
storm fails at once with one poison cause (a relation not found), each failing task upstream of a task
that delivers, in one of two shapes:

- ``--tasks N`` (the default, 200): one DAG maps ``N`` task instances (``storm_native``,
  ``storm_provider``): one DAG run, ``N`` letters;
- ``--dags N``: ``N`` DAGs of one failing task each (``storm_native_0000``..., ``storm_provider_0000``...,
  one DAG file per variant generating them in a loop), all triggered together: ``N`` DAG runs of one
  letter each, ``N`` deliveries.

Each shape has two variants:

1. ``native``: native Airflow, ``retries=0``, no provider in the DAG file;
2. ``provider``: the same under ``apply_profile(..., "report")`` (dead letters at once), the
   delivering task with a ``DeliveryDeadline``.

Each runs ``--rounds`` times, alternating; with more than one round the p95 of each round is printed
with how far the native storm's own p95 moved between its rounds (the noise a ratio is read against). While a storm lasts, a sampler asks Airflow's own UI endpoint
``GET /api/v2/dags`` every half second and reads the provider database's connections
(``pg_stat_activity``). Printed for each side: the time from the first failure (the failing tries
start and raise at once) to the last task ended and to the last letter filed, the provider's REST
reads (the impact thread's log lines: their reads) per letter and per DAG run and the infra watcher's
REST calls (its rounds' log lines: the task instances it lists every 15 s, and the tries it reads of
those its failed tries do not explain), the p95 of ``GET
/api/v2/dags`` during the storm, the peak of the provider database's connections, the mails sent
(new root cause; delivery at risk), and the CPU seconds each component of the stack (its task
processes included) and the whole machine spent from the trigger to the storm's end, and of the
api-server's, what its impact thread and its infra watcher spent (their log lines): on a machine
with few cores the UI's p95 follows them. Targets: the REST reads of a DAG run's letters at most one per 20
letters (``--tasks``), or at most one set per DAG run (``--dags``: a run of one letter reads its own DAG's
tasks, history and assets once, :data:`READS_PER_SET`); ``GET /api/v2/dags`` p95 within 10 % of the
native storm's; every letter filed with its impact; one new-root-cause mail and one at-risk mail per
delivery.

``--executor celery`` runs the same on the CeleryExecutor with Redis (two workers of concurrency 8: the
same 16 slots).

Run: ``.venv/bin/python bench/storm.py [--tasks 200 | --dags 200] [--rounds 1] [--executor celery]``.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from stacks import MAIL_NOTIFIER, bench_stack
from verdict import check, exit_code, judge

DAGS = Path(__file__).resolve().parent / "storm_dags"
VARIANTS = ("native", "provider")
READS = re.compile(
    r"impact of (\d+) letter\(s\) of (\d+) DAG run\(s\) computed with (\d+) REST read\(s\) in ([\d.]+) CPU-s"
)
WATCHED = re.compile(
    r"infra watcher read (\d+) task instance\(s\) with (\d+) REST call\(s\) in ([\d.]+) CPU-s"
)
NEW_ROOT_CAUSE, AT_RISK = "New root cause:", "Delivery at risk:"  # the mails' subjects begin so
SAMPLE_EVERY = 0.5
READS_PER_LETTER_TARGET = 1 / 20
READS_PER_SET = 3  # a DAG run's tasks, its history, its assets (the bench's DAGs have no consumer)
P95_TARGET = 1.10
RUN_TIMEOUT = 1800.0
MAILS_SETTLE = 5.0  # seconds without a new mail: the alerts of the storm were sent

_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)
_PARTS = _NAME.split(Path(__file__).with_name("storm.sql").read_text("utf-8"))
BENCH_SQL = {name: body.strip().rstrip(";") for name, body in zip(_PARTS[1::2], _PARTS[2::2], strict=True)}


@dataclass(frozen=True)
class Shape:
    """A storm's shape: the DAGs of each variant, and what one storm files.

    :param title: the table's heading.
    :param dag_ids: variant -> the DAGs triggered together for one storm of it.
    :param letters: the failures of one storm (one letter each with the provider).
    """

    title: str
    dag_ids: dict[str, list[str]]
    letters: int

    @classmethod
    def of(cls, tasks: int | None, dags: int | None) -> Shape:
        if dags is not None:
            return cls(
                f"{dags} DAGs failing once each at once, one poison cause",
                {variant: [f"storm_{variant}_{n:04d}" for n in range(dags)] for variant in VARIANTS},
                dags,
            )
        tasks = 200 if tasks is None else tasks
        return cls(
            f"{tasks} mapped tasks of one DAG failing at once, one poison cause",
            {variant: [f"storm_{variant}"] for variant in VARIANTS},
            tasks,
        )

    @property
    def runs(self) -> int:
        return len(self.dag_ids["provider"])


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
                (count,) = conn.execute(BENCH_SQL["provider_connections"], {"dbname": dbname}).fetchone()
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
    """What one storm of one variant measured."""

    variant: str
    runs: int
    to_last_end: float
    to_last_letter: float | None
    letters: int
    impacts: int
    reads: int
    watcher_calls: int
    p95_ms: float
    peak_connections: int
    new_root_cause_mails: int
    at_risk_mails: int
    cpu: dict[str, float]


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 2 else (values[0] if values else 0.0)


def cpu_seconds(stack: Any) -> dict[str, float]:
    """CPU seconds (user and system) spent so far by each component with the processes it started, the
    ended ones it reaped included, and by the whole machine (``machine``)."""
    import psutil

    seconds = {}
    for name in stack.processes:
        spent = 0.0
        for pid in stack.process_tree(name):
            try:
                times = psutil.Process(pid).cpu_times()
            except psutil.NoSuchProcess:
                continue
            spent += times.user + times.system + times.children_user + times.children_system
        seconds[name] = spent
    machine = psutil.cpu_times()
    seconds["machine"] = sum(machine) - machine.idle - getattr(machine, "iowait", 0.0)
    return seconds


def query(dsn: str, name: str, runs: dict[str, list[str]]) -> Any:
    """The one row of ``name`` (bench/storm.sql) over the storm's ``runs`` (their DAG ids and run ids)."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        return conn.execute(BENCH_SQL[name], runs).fetchone()


def trigger(stack: Any, dag_ids: list[str]) -> dict[str, list[str]]:
    """Trigger a run of each of ``dag_ids`` together (eight at a time): their DAG ids and run ids."""

    def one(dag_id: str) -> str:
        body = {"logical_date": datetime.now(timezone.utc).isoformat()}
        return str(stack.api("POST", f"/api/v2/dags/{dag_id}/dagRuns", json=body)["dag_run_id"])

    with ThreadPoolExecutor(max_workers=8) as pool:
        run_ids = list(pool.map(one, dag_ids))
    return {"dag_ids": dag_ids, "run_ids": run_ids}


def wait_until(done: Any, timeout: float, what: str) -> None:
    """Poll ``done()`` every half second until it is true; past ``timeout`` raise naming ``what``."""
    until = time.monotonic() + timeout
    while not done():
        if time.monotonic() > until:
            raise TimeoutError(f"{what} not within {timeout:.0f} s")
        time.sleep(0.5)


def settled(smtp: Any, timeout: float = 120) -> list[str]:
    """The subjects received, once no mail came for :data:`MAILS_SETTLE` seconds (at most ``timeout``)."""
    until = time.monotonic() + timeout
    count, quiet_since = len(smtp.subjects()), time.monotonic()
    while time.monotonic() - quiet_since < MAILS_SETTLE and time.monotonic() < until:
        time.sleep(0.5)
        if len(smtp.subjects()) != count:
            count, quiet_since = len(smtp.subjects()), time.monotonic()
    return smtp.subjects()


def one_storm(bench: Any, smtp: Any, shape: Shape, variant: str) -> Storm:
    """Trigger ``variant``'s DAGs together, sample until their runs ended and their impacts are computed."""
    stack = bench.stack
    log_path = stack.home / "stack-logs" / "api-server.log"
    log_from = log_path.stat().st_size if log_path.exists() else 0
    mails_before = len(smtp.subjects())
    cpu_before = cpu_seconds(stack)
    with Sampler(stack, bench.provider_dsn) as sampler:
        runs = trigger(stack, shape.dag_ids[variant])
        ended = len(runs["run_ids"])
        wait_until(
            lambda: query(bench.metadata_dsn, "runs_ended", runs)[0] == ended, RUN_TIMEOUT, "runs ended"
        )
        if variant == "provider":
            wait_until(lambda: not query(bench.provider_dsn, "awaiting_impacts", runs)[0], 120, "impacts")
        subjects = settled(smtp)[mails_before:]  # the at-risk mails leave after the impacts are stored
    cpu = {name: spent - cpu_before.get(name, 0.0) for name, spent in cpu_seconds(stack).items()}
    first, last_end = query(bench.metadata_dsn, "failing_tries", runs)
    letters, last_letter, impacts = query(bench.provider_dsn, "letters", runs)
    log = log_path.read_text(errors="replace")[log_from:] if log_path.exists() else ""
    return Storm(
        variant=variant,
        runs=ended,
        to_last_end=(last_end - first).total_seconds(),
        to_last_letter=(last_letter - first).total_seconds() if last_letter else None,
        letters=int(letters),
        impacts=int(impacts),
        reads=sum(int(match[2]) for match in READS.findall(log)),
        watcher_calls=sum(int(match[1]) for match in WATCHED.findall(log)),
        p95_ms=p95(sampler.latencies) * 1000,
        peak_connections=max(sampler.connections, default=0),
        new_root_cause_mails=sum(s.startswith(NEW_ROOT_CAUSE) for s in subjects),
        at_risk_mails=sum(s.startswith(AT_RISK) for s in subjects),
        cpu={
            **cpu,
            "api-server: impact thread": sum(float(match[3]) for match in READS.findall(log)),
            "api-server: infra watcher": sum(float(match[2]) for match in WATCHED.findall(log)),
        },
    )


def report(storms: list[Storm], shape: Shape, rounds: int) -> None:
    """The table, native beside provider, and the verdicts."""

    def mean(variant: str, name: str) -> float:
        values = [getattr(s, name) for s in storms if s.variant == variant and getattr(s, name) is not None]
        return statistics.fmean(values) if values else float("nan")

    print()
    print(f"{shape.title}; mean of {rounds} run(s) each")
    print(f"  {'':<46}{'native':>12}{'provider':>12}")
    rows = [
        ("DAG runs", "runs", "{:.0f}"),
        ("first failure -> last task ended (s)", "to_last_end", "{:.1f}"),
        ("first failure -> last letter filed (s)", "to_last_letter", "{:.1f}"),
        ("letters filed", "letters", "{:.0f}"),
        ("impacts computed", "impacts", "{:.0f}"),
        ("REST reads of the impact thread", "reads", "{:.0f}"),
        ("REST calls of the infra watcher", "watcher_calls", "{:.0f}"),
        ("GET /api/v2/dags p95 during the storm (ms)", "p95_ms", "{:.0f}"),
        ("peak connections to the provider database", "peak_connections", "{:.0f}"),
        ("mails sent: new root cause", "new_root_cause_mails", "{:.0f}"),
        ("mails sent: delivery at risk", "at_risk_mails", "{:.0f}"),
    ]
    for label, name, form in rows:
        native, ours = mean("native", name), mean("provider", name)
        cells = [form.format(v) if v == v else "-" for v in (native, ours)]
        print(f"  {label:<46}{cells[0]:>12}{cells[1]:>12}")
    for component in sorted(
        {name for s in storms for name in s.cpu}, key=lambda name: (name == "machine", name)
    ):
        native, ours = (
            statistics.fmean(
                [s.cpu.get(component, 0.0) for s in storms if s.variant == variant] or [float("nan")]
            )
            for variant in VARIANTS
        )
        cells = [f"{v:.0f}" if v == v else "-" for v in (native, ours)]
        print(f"  {'CPU seconds: ' + component:<46}{cells[0]:>12}{cells[1]:>12}")
    ours = [s for s in storms if s.variant == "provider"]
    reads, letters, runs = (sum(getattr(s, name) for s in ours) for name in ("reads", "letters", "runs"))
    per_letter, per_run = reads / max(1, letters), reads / max(1, runs)
    watcher = sum(s.watcher_calls for s in ours)
    print(
        f"  REST reads per letter {per_letter:.3f}, per DAG run {per_run:.2f} ({letters} letters, {runs} runs); "
        f"with the infra watcher's calls {(reads + watcher) / max(1, letters):.3f} per letter"
    )
    if shape.runs == 1:
        print(
            f"  REST reads per letter of the DAG run {per_letter:.3f}   target <= {READS_PER_LETTER_TARGET:.3f} "
            f"(one per 20)   {judge('REST reads per letter', per_letter <= READS_PER_LETTER_TARGET)}"
        )
    else:  # one letter per run: the per-20-letters target has nothing to share; one set of reads per run
        print(
            f"  REST reads per DAG run of one letter {per_run:.2f}   target <= {READS_PER_SET} (one set: its "
            f"tasks, history, assets)   {judge('REST reads per DAG run', per_run <= READS_PER_SET)}"
        )
    ratio = mean("provider", "p95_ms") / max(mean("native", "p95_ms"), 1e-9)
    print(
        f"  GET /api/v2/dags p95 {ratio:.2f}x the native storm's   target <= {P95_TARGET:.2f}x   "
        f"{judge('UI p95 within 10 %', ratio <= P95_TARGET)}"
    )
    if rounds > 1:  # the native storm beside itself: how far one round's p95 moves with nothing changed
        by_round = {variant: [s.p95_ms for s in storms if s.variant == variant] for variant in VARIANTS}
        spread = max(by_round["native"]) / max(min(by_round["native"]), 1e-9)
        print(
            "  GET /api/v2/dags p95 by round (ms): "
            + "; ".join(
                f"{variant} {', '.join(f'{v:.0f}' for v in by_round[variant])}" for variant in VARIANTS
            )
            + f"\n  the native storm's p95 moved {spread:.2f}x between its own rounds (its noise on this machine)"
        )
    every = all(s.letters == shape.letters and s.impacts == shape.letters for s in ours)
    print(f"  every failure filed, every impact computed: {check('every letter and impact', every)}")
    # later rounds: the same root cause and deliveries, told already
    told = bool(ours) and (ours[0].new_root_cause_mails, ours[0].at_risk_mails) == (1, shape.runs)
    print(
        f"  one new-root-cause mail and {shape.runs} at-risk mail(s) (one per delivery) for the first storm: "
        f"{check('mails', told)}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--tasks", type=int, help="mapped task instances of one DAG failing at once (200)")
    size.add_argument("--dags", type=int, help="DAGs failing once each, triggered together")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each variant, alternating")
    parser.add_argument(
        "--executor",
        choices=("local", "celery"),
        default="local",
        help="celery: two workers of concurrency 8",
    )
    args = parser.parse_args()
    for name in ("tasks", "dags", "rounds"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name} must be >= 1, got {value}")
    shape = Shape.of(args.tasks, args.dags)

    from devstack.smtp import SmtpSink

    smtp = SmtpSink().start()
    storms: list[Storm] = []
    try:
        env = {
            "BENCH_TASKS": str(args.tasks or 200),
            "BENCH_DAGS": str(args.dags or 0),
            "AIRFLOW__API__WORKERS": "2",
            "AIRFLOW_CONN_SMTP_ALERTS": smtp.connection_json(),
            "AIRFLOW__RETRY_PROVIDER__ALERT_NOTIFIERS": json.dumps([MAIL_NOTIFIER]),
        }
        dag_ids = [dag_id for variant in VARIANTS for dag_id in shape.dag_ids[variant]]
        celery = {"celery_workers": 2, "worker_concurrency": 8}
        with bench_stack("storm", args.executor, DAGS, dag_ids, env, celery_shape=celery) as bench:
            print(
                f"executor: {args.executor}; parallelism 16; {', '.join(bench.stack.components())}",
                flush=True,
            )
            for number in range(1, args.rounds + 1):
                for variant in VARIANTS:
                    storm = one_storm(bench, smtp, shape, variant)
                    storms.append(storm)
                    print(f"  round {number} {variant:<9} {storm}", flush=True)
    finally:
        smtp.stop()
    report(storms, shape, args.rounds)
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
