"""One real Airflow stack for a benchmark: a throwaway PostgreSQL (metadata and provider databases),
Redis for the CeleryExecutor, the stack on a DAG folder with its DAGs unpaused, and all of it stopped
after (bench/drain.py, bench/distributed.py)."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))  # devstack: not in the wheel


@dataclass(frozen=True)
class BenchStack:
    """What a benchmark reads: the stack, and the DSNs of its two databases."""

    stack: Any
    metadata_dsn: str
    provider_dsn: str


MAIL_NOTIFIER = {
    "name": "mail",
    "class": "airflow.providers.smtp.notifications.smtp.SmtpNotifier",
    "kwargs": {"to": "oncall@example.test", "smtp_conn_id": "smtp_alerts"},
}
"""The alert notifier the benchmarks configure: Airflow's SmtpNotifier to the local SMTP sink."""


@contextmanager
def bench_stack(
    name: str,
    executor: str,
    dags_folder: Path,
    dag_ids: Sequence[str],
    extra_env: dict[str, str],
    celery_shape: dict[str, Any],
) -> Iterator[BenchStack]:
    """A started, healthy stack named ``name`` with ``dag_ids`` parsed and unpaused; stopped on exit.

    :param celery_shape: the ``AirflowStack`` arguments for the CeleryExecutor (workers, schedulers...),
        used with ``executor="celery"`` beside the Redis it starts.
    """
    from airflow_retry_provider.dlq.schema import apply_schema
    from devstack.airflow import AirflowStack
    from devstack.postgres import server_from_env_or_start
    from devstack.redis import start_redis

    workdir = Path(tempfile.mkdtemp(prefix=f"arp-bench-{name}-"))
    server = server_from_env_or_start()
    redis = start_redis() if executor == "celery" else None
    stack = None
    try:
        metadata_db, provider_db = f"arp_bench_{name}_meta", f"arp_bench_{name}"
        server.create_database(metadata_db)
        provider_dsn = server.create_database(provider_db)
        with server.connect(provider_db, autocommit=False) as conn:
            apply_schema(conn)
        shape = {"broker_url": redis.url, **celery_shape} if redis is not None else {}
        stack = AirflowStack(
            home=workdir / "airflow-home",
            dags_folder=dags_folder,
            metadata_url=server.sqlalchemy_url(metadata_db),
            provider_dsn=provider_dsn,
            extra_env=extra_env,
            **shape,
        )
        stack.migrate()
        stack.start()
        stack.wait_healthy()
        for dag_id in dag_ids:
            stack.wait_for_dag(dag_id)
            stack.api("PATCH", f"/api/v2/dags/{dag_id}", json={"is_paused": False})
        yield BenchStack(stack, server.dsn(metadata_db), provider_dsn)
    finally:
        if stack is not None:
            stack.stop()
        if redis is not None:
            redis.stop()
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def run_and_wait(stack: Any, dag_id: str, timeout: float) -> dict[str, Any]:
    """Trigger ``dag_id`` now (no logical date) and wait until its run ends; the run as the API returns it."""
    run = stack.api("POST", f"/api/v2/dags/{dag_id}/dagRuns", json={"logical_date": None})
    return stack.wait_for_run(dag_id, run["dag_run_id"], timeout=timeout)
