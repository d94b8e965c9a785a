"""The breakers on a real PostgreSQL: shared state, the rolling window, one probe among racing processes, audited forcing."""

from __future__ import annotations

import multiprocessing
from datetime import timedelta

import psycopg
import pytest

from airflow_retry_provider.breaker.store import BreakerStore
from airflow_retry_provider.policy.breaker import (
    CLOSED,
    HALF_OPEN,
    OPEN,
    WAKE_SLACK_SECONDS,
    BreakerSettings,
)

FAST = BreakerSettings(enabled=True, cooldown_seconds=1, max_cooldown_seconds=4, probe_seconds=30)


def open_breaker(
    store: BreakerStore, dependency: str = "positions_db", settings: BreakerSettings = FAST
) -> None:
    for n in range(settings.min_failures):
        store.record_failure(
            dependency, f"d/r/t{n}/-1", settings, unwell=True, reason="retryable/connection-failed"
        )


def make_half_open(store: BreakerStore, pg_dsn: str, dependency: str = "positions_db") -> None:
    """Open it, then move its probe time into the past (as if the cool-down had passed)."""
    open_breaker(store, dependency)
    with psycopg.connect(pg_dsn) as conn:
        conn.execute(
            "UPDATE retry_breakers SET probe_at = clock_timestamp() - interval '1 second' WHERE dependency = %s",
            (dependency,),
        )


def test_unwell_failures_open_the_breaker_for_every_dag_and_worker(pg_dsn):
    """Five unwell failures from five tasks open it; a second store (another worker) holds a task at once."""
    store = BreakerStore.from_dsn(pg_dsn)
    for n in range(4):
        assert store.record_failure("positions_db", f"a/r/t{n}/-1", FAST, unwell=True).status == CLOSED
    assert store.record_failure("positions_db", "b/r/t/-1", FAST, unwell=True).status == OPEN
    verdict = BreakerStore.from_dsn(pg_dsn).admit("positions_db", "c/r/t/-1", FAST)
    assert verdict.admission.kind == "hold" and verdict.hot and verdict.held_since is not None
    [status] = store.statuses()
    assert (status.dependency, status.breaker.status, status.held, status.failures_10m, status.calls_10m) == (
        "positions_db",
        OPEN,
        1,
        5,
        5,
    )


def test_failures_that_do_not_mean_unwell_and_successes_keep_it_closed(pg_dsn):
    """Poison failures never count; successes dilute the window below 50 %: 5 unwell of 11 calls stays closed."""
    store = BreakerStore.from_dsn(pg_dsn)
    for n in range(10):
        store.record_failure("positions_db", f"p/r/t{n}/-1", FAST, unwell=False, reason="poison/bad-sql")
    assert store.get("positions_db").status == CLOSED
    other = "partner_api"
    for n in range(6):
        store.record_success(other, f"s/r/t{n}/-1")
    for n in range(5):
        breaker = store.record_failure(other, f"f/r/t{n}/-1", FAST, unwell=True)
    assert breaker.status == CLOSED
    assert store.record_failure(other, "f/r/t5/-1", FAST, unwell=True).status == OPEN  # 6 of 12


def test_a_healthy_dependency_answers_run_and_not_hot(pg_dsn):
    """A closed breaker with no failures in the window: run, and the success needs no report."""
    verdict = BreakerStore.from_dsn(pg_dsn).admit("positions_db", "d/r/t/-1", FAST)
    assert (verdict.admission.kind, verdict.hot) == ("run", False)


def test_the_probe_closes_it_and_releases_the_holds(pg_dsn):
    """Half-open: one task probes; its success closes the breaker; the held task then runs and its hold is gone."""
    store = BreakerStore.from_dsn(pg_dsn)
    open_breaker(store)
    assert store.admit("positions_db", "held/r/t/-1", FAST).admission.kind == "hold"
    with psycopg.connect(pg_dsn) as conn:
        conn.execute("UPDATE retry_breakers SET probe_at = clock_timestamp() - interval '1 second'")
    assert store.admit("positions_db", "probe/r/t/-1", FAST).admission.kind == "probe"
    assert store.admit("positions_db", "held/r/t/-1", FAST).admission.kind == "hold"
    assert store.record_success("positions_db", "probe/r/t/-1").status == CLOSED
    assert store.admit("positions_db", "held/r/t/-1", FAST).admission.kind == "run"
    assert store.statuses()[0].held == 0
    history = [(e.from_status, e.to_status) for e in reversed(store.events("positions_db"))]
    assert history == [(CLOSED, OPEN), (OPEN, HALF_OPEN), (HALF_OPEN, CLOSED)]


def test_held_tasks_wake_at_the_next_probe_the_longest_held_first(pg_dsn):
    """Open: the longest-held task asks again at the probe time, the others the slack after it; a long cool-down changes neither."""
    store = BreakerStore.from_dsn(pg_dsn)
    slow = BreakerSettings(enabled=True, cooldown_seconds=600, max_cooldown_seconds=1800)
    open_breaker(store, settings=slow)
    probe_at = store.get("positions_db").probe_at
    first = store.admit("positions_db", "first/r/t/-1", slow).admission
    second = store.admit("positions_db", "second/r/t/-1", slow).admission
    again = store.admit("positions_db", "first/r/t/-1", slow).admission  # asking again keeps its place
    assert (first.until, again.until) == (probe_at, probe_at)
    assert second.until == probe_at + timedelta(seconds=WAKE_SLACK_SECONDS)


def test_a_failed_probe_reopens_with_the_cooldown_doubled(pg_dsn):
    store = BreakerStore.from_dsn(pg_dsn)
    make_half_open(store, pg_dsn)
    assert store.admit("positions_db", "probe/r/t/-1", FAST).admission.kind == "probe"
    breaker = store.record_failure("positions_db", "probe/r/t/-1", FAST, unwell=True)
    assert (breaker.status, breaker.cooldown_seconds) == (OPEN, 2)


def test_a_task_held_longer_than_max_hold_is_told_so_once(pg_dsn):
    """Past max_hold_seconds the verdict says expired and the hold is forgotten (a replay starts afresh)."""
    store = BreakerStore.from_dsn(pg_dsn)
    short = BreakerSettings(enabled=True, max_hold_seconds=1, cooldown_seconds=600, max_cooldown_seconds=600)
    open_breaker(store, settings=short)
    assert not store.admit("positions_db", "w/r/t/-1", short).expired
    with psycopg.connect(pg_dsn) as conn:
        conn.execute("UPDATE retry_breaker_holds SET held_since = held_since - interval '5 seconds'")
    verdict = store.admit("positions_db", "w/r/t/-1", short)
    assert verdict.admission.kind == "hold" and verdict.expired
    assert store.statuses()[0].held == 0
    assert not store.admit("positions_db", "w/r/t/-1", short).expired


def test_forcing_is_recorded_with_who_and_why(pg_dsn):
    store = BreakerStore.from_dsn(pg_dsn)
    store.force("positions_db", "open", "user:ana", "failover of the positions database")
    assert store.admit("positions_db", "x/r/t/-1", FAST).admission.kind == "hold"
    store.force("positions_db", None, "user:ana", "failover done")
    assert store.admit("positions_db", "x/r/t/-1", FAST).admission.kind == "run"
    [back, forced] = store.events("positions_db")
    assert (forced.actor, forced.reason, forced.to_status) == (
        "user:ana",
        "failover of the positions database",
        "forced open (automatic state: closed)",
    )
    assert (back.from_status, back.to_status, back.reason) == (
        "forced open (automatic state: closed)",
        CLOSED,
        "failover done",
    )
    with pytest.raises(ValueError, match="state must be 'open', 'closed' or None, got 'shut'"):
        store.force("positions_db", "shut", "user:ana", "")  # type: ignore[arg-type]


def _race(dsn: str, key: str, start, results) -> None:
    store = BreakerStore.from_dsn(dsn)
    start.wait()
    results.put((key, store.admit("positions_db", key, FAST).admission.kind))


def test_racing_processes_on_a_half_open_breaker_give_exactly_one_probe(pg_dsn):
    """Six processes (workers, the sweeper) ask at the same moment: one probes, five are held."""
    store = BreakerStore.from_dsn(pg_dsn)
    make_half_open(store, pg_dsn)
    ctx = multiprocessing.get_context("spawn")
    start, results = ctx.Barrier(6), ctx.Queue()
    procs = [ctx.Process(target=_race, args=(pg_dsn, f"w{n}/r/t/-1", start, results)) for n in range(6)]
    for proc in procs:
        proc.start()
    answers = [results.get(timeout=60) for _ in procs]
    for proc in procs:
        proc.join(timeout=30)
    kinds = sorted(kind for _, kind in answers)
    assert kinds == ["hold"] * 5 + ["probe"]
    prober = next(key for key, kind in answers if kind == "probe")
    assert store.get("positions_db").probe_key == prober
