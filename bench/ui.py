"""Dead-letter UI benchmark: the list page and the grouped view over 1,000,000 letters.

Starts its own PostgreSQL (or uses AIRFLOW_RETRY_PG_DSN), seeds the letters with generate_series,
and times 20 requests per page through FastAPI's TestClient against ``create_app(db=...)``,
with Airflow's SimpleAuthManager doing the per-DAG authorization (the user is an admin; only the
JWT check, which needs Airflow's metadata database, is replaced by that user). Prints p50 and p95
next to the targets (list <= 300 ms, grouped <= 1 s) and stops what it started.
Run: ``.venv/bin/python bench/ui.py``.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from verdict import exit_code, judge

LETTERS = 1_000_000
REQUESTS = 20
TARGETS_MS = {"list page": 300.0, "grouped view": 1000.0}
DATABASE = "arp_bench_ui"

# 1,000,000 letters over 200 DAGs, 7 tasks, 25 workspaces, 997 root causes and 90 days; a third in dlq.
SEED = """
INSERT INTO retry_dead_letters (
    dag_id, run_id, task_id, map_index, try_number, attempts_used, max_attempts, work_unit_key,
    data_interval_start, data_interval_end, workspace_id, failure_class, category, rule,
    exception_type, message, reason, fingerprint, status, replay_count, created_at, updated_at
)
SELECT 'dag_' || (g %% 200), 'scheduled__' || (g / 200), 'task_' || (g %% 7), -1, 3, 3, 3,
       'ws-' || (g %% 25) || '/' || (g / 200),
       now() - (g * interval '7.776 seconds') - interval '1 day', now() - (g * interval '7.776 seconds'),
       'ws-' || (g %% 25),
       (ARRAY['poison', 'retryable', 'unknown'])[1 + g %% 3],
       (ARRAY['not-found', 'timeout', 'rate-limit', 'schema', 'auth'])[1 + g %% 5],
       'rule-' || (g %% 997 %% 40), 'Error' || (g %% 997 %% 13),
       'failure ' || (g %% 997) || ': upstream answered 503 for job ' || g, 'retries exhausted',
       md5((g %% 997)::text)::char(16),
       (ARRAY['dlq', 'dlq', 'parked', 'resolved', 'dismissed', 'resolved'])[1 + g %% 6], g %% 3,
       now() - (g * interval '7.776 seconds'), now() - (g * interval '7.776 seconds')
FROM generate_series(1, %(n)s) AS g
"""


def configure_airflow(home: Path) -> None:
    """A throwaway AIRFLOW_HOME with the SimpleAuthManager and one admin user (set before importing Airflow)."""
    passwords = home / "passwords.json"
    passwords.write_text(json.dumps({"bench": "bench"}))
    os.environ.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__AUTH_MANAGER": (
                "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
            ),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "bench:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
        }
    )


def timed(client, path: str, samples: int) -> list[float]:  # noqa: ANN001
    """Milliseconds per request (one warm-up request first); every answer must be 200."""
    client.get(path)
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        answer = client.get(path)
        times.append((time.perf_counter() - start) * 1000)
        if answer.status_code != 200:
            raise RuntimeError(f"GET {path} -> {answer.status_code}: {answer.text[:500]}")
    return times


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


def main() -> int:
    configure_airflow(Path(tempfile.mkdtemp(prefix="arp-bench-ui-")))
    from airflow.api_fastapi.app import create_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
    from airflow.api_fastapi.core_api.security import get_user
    from fastapi.testclient import TestClient

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))  # devstack: not in the wheel
    from airflow_retry_provider.database import ProviderDatabase
    from airflow_retry_provider.dlq.schema import apply_schema
    from airflow_retry_provider.plugin.app import create_app
    from devstack.postgres import server_from_env_or_start

    server = server_from_env_or_start()
    try:
        dsn = server.create_database(DATABASE)
        with server.connect(DATABASE, autocommit=False) as conn:
            apply_schema(conn)
        started = time.perf_counter()
        with server.connect(DATABASE) as conn:
            conn.execute(SEED, {"n": LETTERS})
            conn.execute("VACUUM ANALYZE retry_dead_letters")
        print(f"seeded {LETTERS:,} letters in {time.perf_counter() - started:.1f} s")

        create_auth_manager().init()
        # the pages only: no replay driver polling beside the timings
        app = create_app(db=ProviderDatabase.from_dsn(dsn), driver=False)
        app.dependency_overrides[get_user] = lambda: SimpleAuthManagerUser(username="bench", role="admin")
        client = TestClient(app)
        pages = {
            "list page": "/",
            "grouped view": "/?view=groups",
        }
        extra = {
            "list page, DAG + status filter": "/?dag_id=dag_17&status=dlq",
            "list page, third page (keyset)": None,
            "grouped view, status=dlq": "/?view=groups&status=dlq",
            "JSON list, 500 letters": "/api/letters?limit=500",
        }
        first = client.get("/api/letters").json()["next"]
        second = client.get("/api/letters", params=first).json()["next"]
        extra["list page, third page (keyset)"] = (
            f"/?before_created={second['before_created'].replace('+', '%2B')}&before_id={second['before_id']}"
        )
        print(f"{'page':38} {'p50 ms':>8} {'p95 ms':>8} {'target':>10}")
        for name, path in pages.items():
            times = timed(client, path, REQUESTS)
            ok = judge(f"{name} p95 <= {TARGETS_MS[name]:.0f} ms", p95(times) <= TARGETS_MS[name])
            print(
                f"{name:38} {statistics.median(times):8.1f} {p95(times):8.1f} "
                f"{'<= ' + format(TARGETS_MS[name], '.0f'):>10} {ok}"
            )
        for name, maybe_path in extra.items():
            assert maybe_path is not None
            times = timed(client, maybe_path, REQUESTS)
            print(f"{name:38} {statistics.median(times):8.1f} {p95(times):8.1f} {'(info)':>10}")
        print(f"{REQUESTS} requests each over {LETTERS:,} letters, through TestClient (server time)")
        return exit_code()
    finally:
        try:
            server.drop_database(DATABASE)
        finally:
            server.stop()


if __name__ == "__main__":
    sys.exit(main())
