"""Pages benchmark: the letters page, its grouped view and the Deliveries view on a real api-server with
100,000 letters stored, quiet and during a storm (issue 58).

Starts PostgreSQL and one Airflow (LocalExecutor, parallelism 16; scheduler, dag-processor, api-server
with two workers and the plugin, triggerer) on ``bench/storm_dags/``, seeds ``--letters`` letters
(bench/pages.sql: 300 DAGs, 60 days, 500 root causes of very different sizes, each letter with the
impact the impact thread stores, its delivery due the next morning), then asks each page over HTTP as
the signed-in admin, the pages in turn, ``--requests`` times each:

1. quiet: nothing else runs;
2. during a storm: ``storm_provider``'s 200 mapped poison failures file their letters (the callback,
   the impact thread, the alerts) while the pages are asked; a new run starts whenever one ends.

Each page is timed as HTML and as its JSON, the first page and a filtered one. Printed for each: p50 and
p95 beside the anchor from the same run, Airflow's own ``GET /api/v2/dags`` asked in the same turns.
Target: every page and its JSON within 1 s at p95, quiet and during the storm.

Run: ``.venv/bin/python bench/pages.py [--letters 100000] [--requests 30]``.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from stacks import bench_stack
from verdict import check, exit_code, judge

DAGS = Path(__file__).resolve().parent / "storm_dags"
STORM_DAG = "storm_provider"
TARGET_MS = 1000.0
PLUGIN = "/retry-provider"
ANCHOR = "Airflow GET /api/v2/dags (anchor)"
PAGES = {
    "letters page": f"{PLUGIN}/",
    "letters page, DAG + status filter": f"{PLUGIN}/?dag_id=dag_17&status=dlq",
    "letters page, the storm's DAG": f"{PLUGIN}/?dag_id={STORM_DAG}",
    "grouped view": f"{PLUGIN}/?view=groups",
    "grouped view, status=dlq": f"{PLUGIN}/?view=groups&status=dlq",
    "Deliveries page": f"{PLUGIN}/deliveries",
    "JSON letters": f"{PLUGIN}/api/letters",
    "JSON letters, DAG + status filter": f"{PLUGIN}/api/letters?dag_id=dag_17&status=dlq",
    "JSON groups": f"{PLUGIN}/api/groups",
    "JSON groups, status=dlq": f"{PLUGIN}/api/groups?status=dlq",
    "JSON deliveries": f"{PLUGIN}/api/deliveries",
    ANCHOR: "/api/v2/dags?limit=25",
}
_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)
_PARTS = _NAME.split(Path(__file__).with_name("pages.sql").read_text("utf-8"))
BENCH_SQL = {name: body.strip().rstrip(";") for name, body in zip(_PARTS[1::2], _PARTS[2::2], strict=True)}


def seed(dsn: str, letters: int) -> None:
    """``letters`` letters and their impacts (bench/pages.sql), then fresh planner statistics."""
    import psycopg

    started = time.perf_counter()
    with psycopg.connect(dsn) as conn:
        for name in ("seed_letters", "seed_impacts"):
            conn.execute(BENCH_SQL[name], {"n": letters})
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(BENCH_SQL["analyze"], {})
        (count,) = conn.execute(BENCH_SQL["count_seeded"], {}).fetchone()
    print(f"seeded {count:,} letters with their impacts in {time.perf_counter() - started:.1f} s", flush=True)


class StormRuns:
    """Keeps ``storm_provider`` failing: a new run of its 200 mapped tasks whenever the last one ended."""

    def __init__(self, stack: Any) -> None:
        self.stack = stack
        self.runs: list[str] = []

    def keep_going(self) -> None:
        if self.runs:
            state = self.stack.api("GET", f"/api/v2/dags/{STORM_DAG}/dagRuns/{self.runs[-1]}")["state"]
            if state not in ("success", "failed"):
                return
        run = self.stack.api(
            "POST",
            f"/api/v2/dags/{STORM_DAG}/dagRuns",
            json={"logical_date": datetime.now(timezone.utc).isoformat()},
        )
        self.runs.append(run["dag_run_id"])


def sample(stack: Any, requests: int, storm: StormRuns | None) -> dict[str, list[float]]:
    """Milliseconds per request of each page, the pages asked in turn; every answer must be 200."""
    import httpx

    times: dict[str, list[float]] = defaultdict(list)
    headers = {"Authorization": f"Bearer {stack.token()}"}
    with httpx.Client(base_url=stack.base_url, headers=headers, timeout=60) as client:
        for path in PAGES.values():  # one warm-up each: the first request of a worker loads templates
            client.get(path).raise_for_status()
        for _ in range(requests):
            if storm is not None:
                storm.keep_going()
            for name, path in PAGES.items():
                started = time.perf_counter()
                answer = client.get(path)
                times[name].append((time.perf_counter() - started) * 1000)
                if answer.status_code != 200:
                    raise RuntimeError(f"GET {path} -> {answer.status_code}: {answer.text[:500]}")
    return times


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


def storm_letters(dsn: str) -> int:
    import psycopg

    with psycopg.connect(dsn) as conn:
        return int(conn.execute(BENCH_SQL["count_dag"], {"dag_id": STORM_DAG}).fetchone()[0])


def report(tag: str, phase: str, times: dict[str, list[float]]) -> None:
    """One line per page: p50, p95, the p95 over the anchor's, and the verdict (``tag`` opens each line)."""
    anchor = p95(times[ANCHOR])
    print(f"\n{phase}: {len(times[ANCHOR])} requests each")
    print(f"  {'page':<44}{'p50 ms':>9}{'p95 ms':>9}{'x anchor':>10}{'target':>10}")
    for name, values in times.items():
        worst = p95(values)
        verdict = "" if name == ANCHOR else judge(f"{tag} {name} p95 <= 1 s", worst <= TARGET_MS)
        target = "" if name == ANCHOR else f"<= {TARGET_MS:.0f}"
        label = f"{tag} {name}"
        print(
            f"  {label:<44}{statistics.median(values):9.0f}{worst:9.0f}{worst / anchor:10.1f}{target:>10} {verdict}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--letters", type=int, default=100_000, help="letters seeded before the pages are asked"
    )
    parser.add_argument("--requests", type=int, default=30, help="requests of each page in each phase")
    args = parser.parse_args()
    if args.letters < 1 or args.requests < 2:
        parser.error(f"--letters must be >= 1 and --requests >= 2, got {args.letters} and {args.requests}")

    env = {"BENCH_TASKS": "200", "AIRFLOW__API__WORKERS": "2"}
    with bench_stack("pages", "local", DAGS, [STORM_DAG], env, celery_shape={}) as bench:
        stack = bench.stack
        print(f"executor: local; parallelism 16; {', '.join(stack.components())}", flush=True)
        seed(bench.provider_dsn, args.letters)
        quiet = sample(stack, args.requests, storm=None)
        storm = StormRuns(stack)
        during = sample(stack, args.requests, storm)
        filed = storm_letters(bench.provider_dsn)
    report("quiet:", f"quiet, {args.letters:,} letters stored", quiet)
    report("storm:", f"during a storm ({len(storm.runs)} run(s) of 200 mapped poison failures)", during)
    print(f"\n  letters the storm filed while the pages were asked: {filed}")
    print(f"  the storm filed letters while it was measured: {check('storm letters filed', filed > 0)}")
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
