"""What the scenario DAG files share (no DAG here: a DAG file importing another would define its DAGs twice).

Backoff bases are a second or two so the scenarios finish in minutes.
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import DAG

from airflow_retry_provider.policy import Backoff

FAST = Backoff(base=timedelta(seconds=2), multiplier=2, cap=timedelta(seconds=8), jitter=0.25)
START = pendulum.datetime(2026, 11, 1, tz="America/Sao_Paulo")
TAGS = ["airflow-retry-provider", "e2e"]
LOAD_KINDS = ["poison"] * 80 + ["unknown"] * 60 + ["retryable"] * 60


def _dag(dag_id: str) -> DAG:
    return DAG(dag_id=dag_id, schedule=None, start_date=START, catchup=False, tags=TAGS)


def raise_load_failure(kind: str) -> None:
    """Fails as told: poison (missing table), unknown (read timeout) or retryable (503)."""
    if kind == "poison":
        raise RuntimeError('relation "positions_v2" does not exist')
    if kind == "unknown":
        raise TimeoutError("read timed out waiting for the load confirmation")
    exc = RuntimeError("503 Service Unavailable")
    exc.status_code = 503  # type: ignore[attr-defined]
    raise exc
