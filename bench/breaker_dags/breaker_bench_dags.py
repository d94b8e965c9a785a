"""The DAGs of bench/breaker.py: four per variant, each mapping ``BENCH_TASKS`` reads of one partner service.

``breaker_bench_on_*``: the dependency ``bench_partner`` with a breaker (``apply_profile`` +
``apply_capacity``); ``breaker_bench_off_*``: the same without the breaker (``apply_profile`` only
decides the retries); ``breaker_bench_native_*``: Airflow's own retries (the same tries and
delays, no provider). The service's URL is ``BENCH_PARTNER_URL``; it answers 503 during an outage.
"""

from __future__ import annotations

import os
from datetime import timedelta

import pendulum
from airflow.sdk import DAG, task

from airflow_retry_provider import apply_profile
from airflow_retry_provider.capacity import Dependency, DependencyMap, apply_capacity
from airflow_retry_provider.policy import Backoff
from airflow_retry_provider.policy.breaker import BreakerSettings
from airflow_retry_provider.policy.profiles import Profile

POOL = "bench_partner"
DAGS_PER_VARIANT = 4
PROFILE = Profile(
    name="bench-outage",
    max_attempts=4,
    backoff=Backoff(base=timedelta(seconds=2), multiplier=2, cap=timedelta(seconds=4), jitter=0),
    execution_timeout=timedelta(minutes=5),
    description="three retries, 2 s then 4 s apart: about 10 s of retry budget",
    safe_to_repeat=True,
)
BREAKER = BreakerSettings(
    min_failures=3, cooldown_seconds=10, max_cooldown_seconds=20, probe_seconds=120, max_hold_seconds=900
)
WITH_BREAKER = DependencyMap.of(Dependency(POOL, 16, breaker=BREAKER))
WITHOUT_BREAKER = DependencyMap.of(Dependency(POOL, 16))


def _read(part: int, dag_id: str) -> int:
    import urllib.request

    url = os.environ["BENCH_PARTNER_URL"]
    with urllib.request.urlopen(f"{url}/{dag_id}/{part}", timeout=10) as answer:  # a 503 raises HTTPError
        answer.read()
    return part


def _dag(dag_id: str, variant: str) -> DAG:
    with DAG(
        dag_id=dag_id,
        schedule=None,
        start_date=pendulum.datetime(2026, 11, 1, tz="UTC"),
        catchup=False,
        tags=["bench", "airflow-retry-provider"],
        max_active_tasks=16,
    ) as dag:
        parts = list(range(int(os.environ.get("BENCH_TASKS", "25"))))
        if variant == "native":

            @task(
                pool=POOL,
                retries=PROFILE.max_attempts - 1,
                retry_delay=timedelta(seconds=2),
                retry_exponential_backoff=2.0,
                max_retry_delay=timedelta(seconds=4),
            )
            def read_partner(part: int, dag_run=None) -> int:
                return _read(part, dag_run.dag_id)

            read_partner.expand(part=parts)
        else:

            @task
            def read_partner(part: int, dag_run=None) -> int:
                return _read(part, dag_run.dag_id)

            mapped = read_partner.expand(part=parts)
            apply_profile(mapped, PROFILE)
            apply_capacity(
                mapped, POOL, "light", dependencies=WITH_BREAKER if variant == "on" else WITHOUT_BREAKER
            )
    return dag


for _variant in ("on", "off", "native"):
    for _n in range(DAGS_PER_VARIANT):
        _id = f"breaker_bench_{_variant}_{_n}"
        globals()[_id] = _dag(_id, _variant)
