"""The breaker in a real DAG run (``dag.test()``): held work spends no try, one probe closes it, a long outage is a letter."""

from __future__ import annotations

import psycopg
import pytest

from airflow_retry_provider.airflow_compat import retry_policy_reschedules
from airflow_retry_provider.breaker.store import BreakerStore
from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.policy.breaker import CLOSED, HALF_OPEN, OPEN
from devstack.metadata import run_task_instances
from tests.conftest import metadata_dsn
from tests.dag_files import breaker_dags

pytestmark = pytest.mark.dags


def reschedules(dag_id: str, run_id: str) -> dict[tuple[str, int], int]:
    """Reschedules of the live try of each task instance, by (task_id, map_index), on 3.3's schema or 3.4's."""
    with psycopg.connect(metadata_dsn()) as conn:
        live = {r["id"]: (r["task_id"], r["map_index"]) for r in run_task_instances(conn, dag_id, run_id)}
        rows = conn.execute(
            "SELECT ti_id::text, count(*) FROM task_reschedule WHERE ti_id::text = ANY(%s) GROUP BY ti_id",
            (list(live),),
        ).fetchall()
    return {live[ti_id]: count for ti_id, count in rows}


def probe_of(store: BreakerStore) -> tuple[str, int]:
    """(task_id, map_index) of the task that probed (the half-open transition's actor)."""
    [probe] = [e for e in store.events("positions_db") if e.to_status == HALF_OPEN]
    _, _, task_id, map_index = probe.actor.rsplit("/", 3)
    return task_id, int(map_index)


def test_held_tasks_spend_no_try_and_one_probe_closes_the_breaker(airflow_db, provider_conn):
    """While open, every task waits up_for_reschedule at try 1; after the cool-down one probes, succeeds and closes it."""
    store = BreakerStore.from_dsn(provider_conn)
    run = breaker_dags.guarded_dag.test()
    tries = {(ti.task_id, ti.map_index): (ti.state, ti.try_number) for ti in run.get_task_instances()}
    assert tries == {
        ("outage_begins", -1): ("success", 1),
        ("read_positions", -1): ("success", 1),
        ("mapped_read", 0): ("success", 1),
        ("mapped_read", 1): ("success", 1),
    }
    held = reschedules("breaker_guarded", run.run_id)
    assert set(held) >= {("read_positions", -1), ("mapped_read", 0), ("mapped_read", 1)} - {
        probe_of(store)
    }, held
    assert store.get("positions_db").status == CLOSED
    history = [(e.from_status, e.to_status) for e in reversed(store.events("positions_db"))]
    assert history == [(CLOSED, OPEN), (OPEN, HALF_OPEN), (HALF_OPEN, CLOSED)]
    probe = store.events("positions_db")[1]
    assert probe.actor.startswith(f"breaker_guarded/{run.run_id}/") and probe.reason.endswith(" probes")
    assert store.statuses()[0].held == 0


def test_a_task_held_past_max_hold_fails_at_once_without_a_retry(airflow_db, provider_conn):
    """A dependency down longer than max_hold_seconds: the task is held, then fails at try 1 (its 2 retries unspent)."""
    store = BreakerStore.from_dsn(provider_conn)
    store.force("positions_db", "open", "user:ana", "positions database failover")
    run = breaker_dags.outage_dag.test()
    [ti] = run.get_task_instances()
    assert (ti.state, ti.try_number) == ("failed", 1)
    assert reschedules("breaker_outage", run.run_id)[("read_positions_during_outage", -1)] >= 1
    assert store.statuses()[0].held == 0


def test_a_try_that_fails_while_the_breaker_is_open_is_kept_on_3_4(airflow_db, provider_conn):
    """3.4: the unwell failure while open is rescheduled (try 1 kept, a hold of the outage); 3.3 spends it (try 2)."""
    store = BreakerStore.from_dsn(provider_conn)
    run = breaker_dags.fails_while_open_dag.test()
    [ti] = run.get_task_instances()
    kept = retry_policy_reschedules()
    assert (ti.state, ti.try_number) == ("success", 1 if kept else 2)
    [outage] = store.outages("positions_db")
    assert outage.closed_at is not None
    if kept:
        assert reschedules("breaker_fails_while_open", run.run_id)[("read_while_the_breaker_opens", -1)] >= 1
        assert outage.holds >= 1  # the kept try is an attempt saved


def test_letters_filed_during_an_outage_name_the_dependency_and_group_under_it(airflow_db, provider_conn):
    """Two tasks held past max_hold in one outage: two letters, one fingerprint (the outage's), the dependency named."""
    from airflow_retry_provider.policy.breaker import outage_fingerprint

    store = BreakerStore.from_dsn(provider_conn)
    store.force("positions_db", "open", "user:ana", "positions database failover")
    opened_at = store.get("positions_db").opened_at
    run = breaker_dags.outage_letters_dag.test()
    assert {ti.task_id: ti.state for ti in run.get_task_instances()} == {
        "load_positions": "failed",
        "price_positions": "failed",
    }
    with ProviderDatabase.from_dsn(provider_conn).transaction() as cur:
        cur.execute(
            "SELECT task_id, fingerprint, reason FROM retry_dead_letters WHERE dag_id = %s ORDER BY task_id",
            ("breaker_outage_letters",),
        )
        letters = cur.fetchall()
    assert [task_id for task_id, _, _ in letters] == ["load_positions", "price_positions"]
    assert {fp for _, fp, _ in letters} == {outage_fingerprint("positions_db", opened_at)}
    for _, _, reason in letters:
        assert reason.startswith("root cause: dependency 'positions_db' is down (breaker open since ")
