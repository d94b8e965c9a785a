"""A task guarded by its dependency's breaker (``apply_capacity`` with ``breaker:`` in the map).

``tests/dags/test_breaker_dags.py`` runs them with ``dag.test()``: in ``breaker_guarded`` the first
task opens the breaker of ``positions_db`` (as failures elsewhere would), the guarded tasks are held
without spending a try, one probes after the cool-down and closes it.
"""

from __future__ import annotations

from typing import Any

import pendulum
from airflow.sdk import DAG, task

from airflow_retry_provider.capacity import Dependency, DependencyMap, apply_capacity
from airflow_retry_provider.policy.breaker import BreakerSettings

BREAKER = BreakerSettings(
    cooldown_seconds=15, max_cooldown_seconds=30, probe_seconds=60, max_hold_seconds=600
)
DEPENDENCIES = DependencyMap.of(Dependency("positions_db", 2, breaker=BREAKER))
SHORT_HOLD = DependencyMap.of(
    Dependency(
        "positions_db",
        2,
        breaker=BreakerSettings(cooldown_seconds=1, max_cooldown_seconds=1, max_hold_seconds=1),
    )
)


def _test_dag(dag_id: str, **kwargs: Any) -> DAG:
    """A DAG the tests trigger by hand (no schedule, no catch-up), tagged ``test``."""
    return DAG(
        dag_id=dag_id,
        schedule=None,
        start_date=pendulum.datetime(2026, 11, 1, tz="UTC"),
        catchup=False,
        tags=["test"],
        **kwargs,
    )


with _test_dag("breaker_guarded", default_args={"retries": 2}) as guarded_dag:

    @task
    def outage_begins() -> None:
        """Other DAGs' tasks fail on positions_db (503s) just before ours start: the breaker opens."""
        from airflow_retry_provider.breaker.store import BreakerStore

        store = BreakerStore.from_conn_id()
        for n in range(BREAKER.min_failures):
            store.record_failure(
                "positions_db", f"other/r/t{n}/-1", BREAKER, unwell=True, reason="server-error"
            )

    @task
    def read_positions(ti=None) -> int:
        return ti.try_number

    @task
    def mapped_read(part: int) -> int:
        return part

    begins = outage_begins()
    begins >> apply_capacity(read_positions(), "positions_db", "light", dependencies=DEPENDENCIES)
    begins >> apply_capacity(
        mapped_read.expand(part=[1, 2]), "positions_db", "light", dependencies=DEPENDENCIES
    )


with _test_dag("breaker_outage", default_args={"retries": 2}) as outage_dag:

    @task
    def read_positions_during_outage() -> str:
        return "ran"

    apply_capacity(read_positions_during_outage(), "positions_db", "light", dependencies=SHORT_HOLD)


with _test_dag("breaker_outage_letters") as outage_letters_dag:
    from airflow_retry_provider.retry_policy import apply_profile

    @task
    def load_positions() -> str:
        return "ran"

    @task
    def price_positions() -> str:
        return "ran"

    for made in (load_positions(), price_positions()):
        apply_capacity(apply_profile(made, "pipeline"), "positions_db", "light", dependencies=SHORT_HOLD)


FAST_PROBE = BreakerSettings(
    cooldown_seconds=2, max_cooldown_seconds=4, probe_seconds=60, max_hold_seconds=600
)

with _test_dag("breaker_fails_while_open") as fails_while_open_dag:
    from datetime import timedelta

    from airflow_retry_provider.policy.backoff import Backoff
    from airflow_retry_provider.retry_policy import ClassifiedRetryPolicy

    @task(
        retries=1,
        retry_policy=ClassifiedRetryPolicy(
            max_attempts=2,
            infra_allowance=0,  # retries=1: the code's one retry, no rerun of a killed try
            backoff=Backoff(base=timedelta(seconds=1), cap=timedelta(seconds=1)),
        ),
    )
    def read_while_the_breaker_opens() -> str:
        """First run: the breaker opens while it runs (others' 503s), then its own call is refused.
        Once the breaker has an outage, it is the probe, and the dependency answers."""
        from airflow_retry_provider.breaker.store import BreakerStore

        store = BreakerStore.from_conn_id()
        if store.get("positions_db").opened_at is None:
            for n in range(FAST_PROBE.min_failures):
                store.record_failure(
                    "positions_db", f"other/r/t{n}/-1", FAST_PROBE, unwell=True, reason="server-error"
                )
            raise ConnectionError("connection refused by positions_db")
        return "read"

    apply_capacity(
        read_while_the_breaker_opens(),
        "positions_db",
        "light",
        dependencies=DependencyMap.of(Dependency("positions_db", 2, breaker=FAST_PROBE)),
    )
