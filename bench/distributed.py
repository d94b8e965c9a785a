"""Distributed benchmark: the provider against plain Airflow on one stack, in one run.

Starts PostgreSQL (or uses AIRFLOW_RETRY_PG_DSN), Redis, and Airflow with the CeleryExecutor (two
schedulers, two workers of concurrency 2, an api-server with two workers); ``--executor local``
runs the same figures on the LocalExecutor (one scheduler). On that stack, alternating, it runs
the same 200 mapped tasks that fail once with a retryable error and then succeed: with Airflow's
native retries (``retries=1``, ``retry_delay`` 1 s) and with ``apply_profile`` and a 1 s backoff.
It prints, with OK or MISSED against the targets:

- drain time (trigger to run success) of each and their ratio (target <= 1.2x);
- retry start lag (try 2's start minus the chosen not-before time: try 1's end plus the delay)
  p50/p95/max of each (target: ours within 0.5 s of native at each percentile);
- letters filed per second for 1,000 poison failures (``--poison``) across the workers.

Run: ``.venv/bin/python bench/distributed.py [--executor local] [--rounds 2] [--tasks 200] [--poison 1000]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from stacks import bench_stack, run_and_wait
from verdict import check, exit_code, judge

DAGS = Path(__file__).resolve().parent / "dags"
DRAIN_RATIO_TARGET = 1.2
LAG_TARGET_S = 0.5

NATIVE_DELAY_S = 1.0  # the native DAGs' retry_delay: try 1 carries no override


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def drain_seconds(run: dict[str, Any]) -> float:
    return (
        datetime.fromisoformat(run["end_date"]) - datetime.fromisoformat(run["queued_at"])
    ).total_seconds()


def retry_lags(metadata_dsn: str, run: dict[str, Any]) -> list[float]:
    """How late try 2 of each task instance started after try 1's end plus its delay (seconds).

    The tries are read through ``airflow_compat.run_tries_query``: 3.3 keeps try 1 in
    ``task_instance_history``, 3.4 in an archived ``task_instance`` row.
    """
    import psycopg

    from devstack.metadata import run_tries_query

    with psycopg.connect(metadata_dsn) as conn:
        rows = run_tries_query(conn, run["dag_id"], run["dag_run_id"])
    tries = {(r["task_id"], r["map_index"], r["try_number"]): r for r in rows}
    lags = []
    for (task_id, map_index, number), first in tries.items():
        second = tries.get((task_id, map_index, 2))
        if number != 1 or second is None or first["end_date"] is None or second["start_date"] is None:
            continue
        delay = first["retry_delay_override"]
        delay = NATIVE_DELAY_S if delay is None else float(delay)
        lags.append((second["start_date"] - (first["end_date"] + timedelta(seconds=delay))).total_seconds())
    return lags


def letters_per_second(stack: Any, provider_dsn: str, timeout: float) -> tuple[int, float]:
    import psycopg

    run = run_and_wait(stack, "bench_poison", timeout)
    with psycopg.connect(provider_dsn) as conn:
        count, last = conn.execute(
            "SELECT count(*), max(created_at) FROM retry_dead_letters WHERE run_id = %s",
            (run["dag_run_id"],),
        ).fetchone()
    elapsed = (last - datetime.fromisoformat(run["queued_at"])).total_seconds() if count else float("inf")
    return int(count), elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executor", choices=("celery", "local"), default="celery")
    parser.add_argument("--rounds", type=int, default=2, help="native/policy pairs, alternating order")
    parser.add_argument("--tasks", type=int, default=200, help="mapped tasks failing once, per run")
    parser.add_argument("--poison", type=int, default=1000, help="poison failures for the letters/s figure")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds to wait for one run")
    args = parser.parse_args()

    with bench_stack(
        "dist",
        args.executor,
        DAGS,
        ("bench_native", "bench_policy", "bench_poison"),
        {
            "BENCH_TASKS": str(args.tasks),
            "BENCH_POISON_TASKS": str(args.poison),
            "AIRFLOW__CORE__PARALLELISM": "4",  # the same 4 task slots as 2 workers x 2
            "AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG": "64",
        },
        celery_shape={"schedulers": 2, "celery_workers": 2, "api_workers": 2},
    ) as bench:
        stack = bench.stack
        print(f"executor: {args.executor}; {', '.join(stack.components())}")

        drains: dict[str, list[float]] = {"native": [], "policy": []}
        lags: dict[str, list[float]] = {"native": [], "policy": []}
        for number in range(args.rounds):
            order = ("native", "policy") if number % 2 == 0 else ("policy", "native")
            for variant in order:
                run = run_and_wait(stack, f"bench_{variant}", args.timeout)
                if run["state"] != "success":
                    print(f"bench_{variant} ended {run['state']}", file=sys.stderr)
                    return 1
                drains[variant].append(drain_seconds(run))
                lags[variant] += retry_lags(bench.metadata_dsn, run)
                print(f"  round {number + 1} {variant:<6} drain {drains[variant][-1]:7.1f} s", flush=True)

        native, ours = statistics.median(drains["native"]), statistics.median(drains["policy"])
        ratio = ours / native
        print(f"\n{args.tasks} mapped tasks failing once, then succeeding (median of {args.rounds} rounds)")
        print(f"  drain native retries         {native:8.1f} s")
        print(f"  drain policy + DLQ callbacks {ours:8.1f} s")
        print(
            f"  ratio                        {ratio:8.2f}x  target <= {DRAIN_RATIO_TARGET}x  {judge('drain ratio', ratio <= DRAIN_RATIO_TARGET)}"
        )
        print("\nretry start lag (start of try 2 minus try 1's end + delay), seconds")
        print(f"  {'':8} {'p50':>7} {'p95':>7} {'max':>7}  n")
        figures = {}
        for variant in ("native", "policy"):
            values = lags[variant]
            figures[variant] = [percentile(values, 0.5), percentile(values, 0.95), max(values)]
            p50, p95, worst = figures[variant]
            print(f"  {variant:<8} {p50:7.2f} {p95:7.2f} {worst:7.2f}  {len(values)}")
        excess = [ours - native for ours, native in zip(figures["policy"], figures["native"], strict=True)]
        within = all(value <= LAG_TARGET_S for value in excess)
        print(
            "  policy - native: "
            + " / ".join(f"{value:+.2f}" for value in excess)
            + f" s  target <= +{LAG_TARGET_S} s  {judge('retry start lag', within)}"
        )

        count, elapsed = letters_per_second(stack, bench.provider_dsn, args.timeout)
        print(
            f"\n{args.poison} poison failures: {count} letters in {elapsed:.1f} s = {count / elapsed:.1f} letters/s"
        )
        print(f"  one letter per poison failure: {check('letters filed', count == args.poison)}")
        return exit_code()


if __name__ == "__main__":
    sys.exit(main())
