"""Tasks that call one partner service, for the breaker's end-to-end proof (tests/e2e/test_breaker.py).

The service's URL is the Variable ``outage_service_url``; it answers 503 during an outage. Each
DAG maps ``read_partner`` over ``parts`` (the Variable ``outage_parts``, default 6): the
``outage_breaker_*`` DAGs name the dependency ``outage_partner_api`` with a breaker, the
``outage_retries`` DAG names it without one (the same profile: its retries are all it has).
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import DAG, Variable, task

from airflow_retry_provider import apply_profile
from airflow_retry_provider.capacity import Dependency, DependencyMap, apply_capacity
from airflow_retry_provider.policy import Backoff
from airflow_retry_provider.policy.breaker import BreakerSettings
from airflow_retry_provider.policy.profiles import Profile

POOL = "outage_partner_api"
OUTAGE_PROFILE = Profile(
    name="outage",
    max_attempts=4,
    backoff=Backoff(base=timedelta(seconds=2), multiplier=2, cap=timedelta(seconds=4), jitter=0),
    execution_timeout=timedelta(minutes=5),
    description="three retries, 2 s then 4 s apart: about 10 s of retry budget",
    safe_to_repeat=True,
)
# the cool-down doubles to 80 s after three failed probes: held tasks must still start soon after the close
BREAKER = BreakerSettings(
    min_failures=3, cooldown_seconds=10, max_cooldown_seconds=80, probe_seconds=120, max_hold_seconds=900
)
WITH_BREAKER = DependencyMap.of(Dependency(POOL, 8, breaker=BREAKER))
WITHOUT_BREAKER = DependencyMap.of(Dependency(POOL, 8))


def _read(part: int, dag_id: str) -> int:
    import urllib.request

    url = Variable.get("outage_service_url")
    with urllib.request.urlopen(f"{url}/{dag_id}/{part}", timeout=10) as answer:  # a 503 raises HTTPError
        answer.read()
    return part


def _outage_dag(dag_id: str, dependencies: DependencyMap) -> DAG:
    with DAG(
        dag_id=dag_id,
        schedule=None,
        start_date=pendulum.datetime(2026, 11, 1, tz="UTC"),
        catchup=False,
        tags=["test", "airflow-retry-provider"],
        max_active_tasks=16,
    ) as dag:

        @task
        def parts() -> list[int]:
            return list(range(int(Variable.get("outage_parts", default="6"))))

        @task
        def read_partner(part: int, dag_run=None) -> int:
            return _read(part, dag_run.dag_id)

        mapped = read_partner.expand(part=parts())
        apply_profile(mapped, OUTAGE_PROFILE)
        apply_capacity(mapped, POOL, "light", dependencies=dependencies)
    return dag


outage_breaker_a = _outage_dag("outage_breaker_a", WITH_BREAKER)
outage_breaker_b = _outage_dag("outage_breaker_b", WITH_BREAKER)
outage_retries = _outage_dag("outage_retries", WITHOUT_BREAKER)
