"""Drain benchmark: what the provider costs a task when nothing goes wrong, against plain Airflow, in one stack.

Starts PostgreSQL (or uses AIRFLOW_RETRY_PG_DSN) and one Airflow with the LocalExecutor
(parallelism 16); ``--executor celery`` runs the same on the CeleryExecutor with Redis (two
workers of concurrency 8: the same 16 slots). Four DAGs (``bench/drain_dags/``, one file each,
so that only variant 2's file imports the provider) map ``--tasks`` task instances that fail once
with ``ConnectionResetError(104, "Connection reset by peer")`` at try 1 and succeed at try 2:

1. plain Airflow: ``@task(retries=1, retry_delay=timedelta(seconds=1))``;
2. the same, with ``import airflow_retry_provider, airflow_retry_provider.retry_policy`` in the DAG file;
3. policy only: ``@task(retries=1, retry_policy=ClassifiedRetryPolicy("dashboard", backoff=1 s constant, infra_allowance=0))``;
4. ``apply_profile(work.expand(...), "dashboard", backoff=<the same>)``: policy, execution timeout,
   dead-letter callbacks.

Each variant runs ``--rounds`` times, alternating (1, 2, 3, 4, 1, 2, 3, 4, ...). Drain = the run's
``queued_at`` (the trigger) to its ``end_date`` (``success``). It prints each run, each mean and its
ratio to plain Airflow, with OK or MISSED against the targets (issue 31): policy only <= 1.02x,
apply_profile <= 1.05x; and WRONG unless every task instance of every run succeeded at try 2.

Run: ``.venv/bin/python bench/drain.py [--executor celery] [--rounds 2] [--tasks 200]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from stacks import bench_stack, run_and_wait
from verdict import check, exit_code, judge

DAGS = Path(__file__).resolve().parent / "drain_dags"
VARIANTS = {  # name -> (dag_id, what it is, target ratio to plain Airflow or None)
    "plain": ("drain_plain", "plain Airflow: @task(retries=1, retry_delay=1 s)", None),
    "import": ("drain_import", "the same + import airflow_retry_provider(.retry_policy)", None),
    "policy": ("drain_policy", "policy only: retry_policy=ClassifiedRetryPolicy(dashboard)", 1.02),
    "profile": ("drain_profile", "apply_profile(work.expand(...), dashboard)", 1.05),
}

# the try each task instance of one run ended at, and its state
TRIES_SQL = """
SELECT count(*) FILTER (WHERE state = 'success' AND try_number = 2), count(*)
FROM task_instance WHERE dag_id = %(dag_id)s AND run_id = %(run_id)s
"""


def drain_seconds(run: dict[str, Any]) -> float:
    return (
        datetime.fromisoformat(run["end_date"]) - datetime.fromisoformat(run["queued_at"])
    ).total_seconds()


def succeeded_at_try_two(metadata_dsn: str, run: dict[str, Any]) -> tuple[int, int]:
    """(task instances that succeeded at try 2, all task instances) of ``run``."""
    import psycopg

    with psycopg.connect(metadata_dsn) as conn:
        row = conn.execute(TRIES_SQL, {"dag_id": run["dag_id"], "run_id": run["dag_run_id"]}).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def order_of(rounds: int) -> list[str]:
    """The runs in order: every variant once per round, always in the same order (1, 2, 3, 4, 1, ...)."""
    return [name for _ in range(rounds) for name in VARIANTS]


def report(drains: dict[str, list[float]], tasks: int, rounds: int, executor: str) -> list[str]:
    """The table: each variant's mean drain, its ratio to plain Airflow and, where it has one, its target."""
    lines = [
        f"{tasks} mapped tasks failing once (ConnectionResetError 104), then succeeding at try 2; "
        f"{executor} executor; mean of {rounds} run(s) each",
        f"  {'variant':<58} {'mean drain':>10} {'vs plain':>9}",
    ]
    plain = statistics.mean(drains["plain"])
    for name, (_, label, target) in VARIANTS.items():
        mean = statistics.mean(drains[name])
        ratio = mean / plain
        line = f"  {label:<58} {mean:8.1f} s {ratio:8.2f}x"
        if target is not None:
            line += f"  target <= {target:.2f}x  {judge(f'{name} drain ratio', ratio <= target)}"
        lines.append(line)
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executor", choices=("local", "celery"), default="local")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each variant, alternating")
    parser.add_argument("--tasks", type=int, default=200, help="mapped task instances per run")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds to wait for one run")
    args = parser.parse_args()
    if args.rounds < 1 or args.tasks < 1:
        parser.error(f"--rounds and --tasks must be >= 1, got --rounds {args.rounds} --tasks {args.tasks}")

    with bench_stack(
        "drain",
        args.executor,
        DAGS,
        [dag_id for dag_id, _, _ in VARIANTS.values()],
        {
            "BENCH_TASKS": str(args.tasks),
            "AIRFLOW__CORE__PARALLELISM": "16",
            "AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG": "16",
        },
        celery_shape={"celery_workers": 2, "worker_concurrency": 8},
    ) as bench:
        stack = bench.stack
        print(f"executor: {args.executor}; parallelism 16; {', '.join(stack.components())}")

        drains: dict[str, list[float]] = {name: [] for name in VARIANTS}
        wrong: list[str] = []
        for number, name in enumerate(order_of(args.rounds)):
            dag_id = VARIANTS[name][0]
            run = run_and_wait(stack, dag_id, args.timeout)
            at_two, total = succeeded_at_try_two(bench.metadata_dsn, run)
            if run["state"] != "success" or (at_two, total) != (args.tasks, args.tasks):
                wrong.append(f"{dag_id} run {number // len(VARIANTS) + 1}: {run['state']}, {at_two}/{total}")
            drains[name].append(drain_seconds(run))
            print(
                f"  round {number // len(VARIANTS) + 1} {name:<8} drain {drains[name][-1]:7.1f} s  "
                f"({at_two}/{total} succeeded at try 2)",
                flush=True,
            )
        print()
        for line in report(drains, args.tasks, args.rounds, args.executor):
            print(line)
        print(
            f"  every task instance of every run succeeded at try 2: {check('tries', not wrong)}"
            + (f" ({'; '.join(wrong)})" if wrong else "")
        )
        return exit_code()


if __name__ == "__main__":
    sys.exit(main())
