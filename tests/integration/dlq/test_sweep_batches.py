"""Issue 46 on a real PostgreSQL against a local Airflow: the batched sweep decides every letter as the one-by-one one did.

The same state is built twice (two databases, two stand-ins of Airflow) and swept once one letter
per call (``tests/one_by_one.py``, the sweep before issue 46) and once in batches
(``sweep_in_batches``); then every letter's status, try and replays, and the letters filed, are
compared. Then what the batches add: a page budget the next sweep continues, a 500 mid-sweep that
keeps the sweep's place, a lost watermark made up by the full pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from datetime import datetime, timedelta, timezone
from typing import Any

import psycopg
import pytest

from airflow_retry_provider.dlq.models import SweepState
from airflow_retry_provider.dlq.replay import ReplayEngine, ReplayRequest
from airflow_retry_provider.dlq.store import DeadLetterStore
from airflow_retry_provider.dlq.sweeper import DEFAULT_LOOKBACK, sweep_in_batches
from airflow_retry_provider.dlq.sync import OutcomeSync
from airflow_retry_provider.hooks.airflow_api import AirflowApi, ApiCredentials
from tests.conftest import fresh_database
from tests.factories import new_letter
from tests.local_airflow import FAULT_DAG, FaultAirflow, TaskInstance, fault_airflow
from tests.one_by_one import check_one_by_one

CAP = 3
REQUEST = ReplayRequest("ana", "vendor fixed the feed", "v2")
NO_GRACE = timedelta(0)
# every kind of open letter (or none) beside every way its task instance can be found by the sweep
LETTERS = ("none", "dlq", "parked", "cleared", "claim-expired", "claim-unknown")
OUTCOMES = ("success", "failed-same", "failed-newer", "running", "upstream_failed", "deleted", "untouched")
SNAPSHOT = """
SELECT l.run_id, l.task_id, l.status, l.try_number, l.replay_count,
       coalesce(array_agg(r.outcome ORDER BY r.id) FILTER (WHERE r.id IS NOT NULL), '{}') AS replays
FROM retry_dead_letters l LEFT JOIN retry_replays r ON r.letter_id = l.id
GROUP BY l.id ORDER BY l.run_id, l.task_id, l.try_number, l.status
"""


@pytest.fixture
def second_dsn(pg_server) -> Iterator[str]:
    """A second fresh database with the provider's schema (the other sweep's)."""
    with fresh_database(pg_server) as dsn:
        yield dsn


def _api(url: str) -> AirflowApi:
    return AirflowApi(ApiCredentials(url, "admin", "admin"), timeout=10)


def _set(fake: FaultAirflow, run_id: str, task_id: str, state: str | None, try_number: int) -> None:
    with fake.lock:
        ended = datetime.now(timezone.utc) if state not in (None, "running") else None
        fake.tis[(run_id, task_id)] = TaskInstance(run_id, task_id, state, try_number, ended)


def build(dsn: str, url: str, fake: FaultAirflow) -> None:
    """One run per (letter, outcome): task ``a`` failed at try 1, its letter (or none), then what Airflow shows."""
    store = DeadLetterStore.from_dsn(dsn)
    api = _api(url)
    engine = ReplayEngine(store, api, replay_cap=CAP, lease_seconds=60)
    for kind in LETTERS:
        for outcome in OUTCOMES:
            run_id = f"{kind}.{outcome}"
            fake.add_run(run_id, {"a": "failed", "b": "upstream_failed"})
            if kind != "none":
                letter_id = store.file(
                    new_letter(dag_id=FAULT_DAG, run_id=run_id, task_id="a"), CAP
                ).letter_id
                letter = store.get(letter_id)
                assert letter is not None
                if kind == "parked":
                    store.park([letter_id], "ana", "vendor ticket 7")
                elif kind != "dlq":
                    replay_id = engine.claim(letter, REQUEST)
                    assert replay_id is not None
                    if kind == "cleared":
                        assert engine.clear(api, letter, replay_id, REQUEST).outcome == "cleared"
                    with psycopg.connect(dsn, autocommit=True) as conn:
                        conn.execute(
                            "UPDATE retry_replays SET lease_until = now() - interval '1 hour',"
                            " outcome = CASE WHEN %(unknown)s THEN 'unknown' ELSE outcome END WHERE letter_id = %(id)s",
                            {"id": letter_id, "unknown": kind == "claim-unknown"},
                        )
            if outcome == "deleted":
                fake.delete_run(run_id)
            elif outcome == "success":
                _set(fake, run_id, "a", "success", 2)
            elif outcome == "failed-same":
                _set(fake, run_id, "a", "failed", 1)
            elif outcome == "failed-newer":
                _set(fake, run_id, "a", "failed", 2)
            elif outcome == "running":
                _set(fake, run_id, "a", "running", 2)
            elif outcome == "upstream_failed":
                _set(fake, run_id, "a", "upstream_failed", 2)
    api.close()


def snapshot(dsn: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn) as conn:
        return [tuple(row) for row in conn.execute(SNAPSHOT).fetchall()]


def test_the_batched_sweep_decides_every_letter_as_one_call_per_letter_did(pg_dsn, second_dsn):
    """On the same state, every letter ends resolved, filed again, released, parked or waiting alike, and the same failures are filed."""
    with ExitStack() as stack:
        url_a, fake_a = stack.enter_context(fault_airflow(10.0))
        url_b, fake_b = stack.enter_context(fault_airflow(10.0))
        build(pg_dsn, url_a, fake_a)
        build(second_dsn, url_b, fake_b)
        assert snapshot(pg_dsn) == snapshot(second_dsn)
        before = snapshot(pg_dsn)

        store_a, api_a = DeadLetterStore.from_dsn(pg_dsn), stack.enter_context(_api(url_a))
        one_report, one_resolved, one_sync = check_one_by_one(
            OutcomeSync(store_a, api_a, replay_cap=CAP), [FAULT_DAG], grace=NO_GRACE
        )
        store_b, api_b = DeadLetterStore.from_dsn(second_dsn), stack.enter_context(_api(url_b))
        report, resolved, sync, behind = sweep_in_batches(
            store_b,
            api_b,
            OutcomeSync(store_b, api_b, replay_cap=CAP),
            [FAULT_DAG],
            CAP,
            DEFAULT_LOOKBACK,
            NO_GRACE,
            max_pages=150,
        )

    assert snapshot(pg_dsn) == snapshot(second_dsn)
    assert snapshot(pg_dsn) != before  # the state had something to decide
    assert not report.errors and not sync.errors and not one_sync.errors
    assert len(report.filed) == len(one_report.filed) and report.filed  # which: the snapshots above
    assert resolved == one_resolved and resolved
    for name in ("resolved", "refiled", "released"):
        assert sorted(getattr(sync, name)) == sorted(getattr(one_sync, name)), name
    assert behind.letters_unchecked == 0 and behind.caught_up and behind.pass_complete


def _resting(dsn: str, url: str, fake: FaultAirflow, runs: int) -> list[int]:
    """``runs`` dlq letters whose task instance failed; every third one since succeeded (cleared by hand)."""
    store = DeadLetterStore.from_dsn(dsn)
    succeeded = []
    for n in range(runs):
        run_id = f"r{n:04d}"
        fake.add_run(run_id, {"a": "failed", "b": "upstream_failed"})
        letter_id = store.file(new_letter(dag_id=FAULT_DAG, run_id=run_id, task_id="a"), CAP).letter_id
        if n % 3 == 0:
            _set(fake, run_id, "a", "success", 2)
            succeeded.append(letter_id)
    return succeeded


def _sweep(dsn: str, url: str, max_pages: int) -> Any:
    store = DeadLetterStore.from_dsn(dsn)
    with _api(url) as api:
        return sweep_in_batches(
            store,
            api,
            OutcomeSync(store, api, replay_cap=CAP),
            [FAULT_DAG],
            CAP,
            DEFAULT_LOOKBACK,
            NO_GRACE,
            max_pages=max_pages,
        )


def test_a_lost_watermark_is_made_up_by_the_full_pass_spread_over_budgeted_sweeps(pg_dsn):
    """With the watermark past every change, sweeps of 3 pages resolve every succeeded letter in turn, saying how many are left."""
    with fault_airflow(10.0) as (url, fake):
        succeeded = _resting(pg_dsn, url, fake, 450)
        store = DeadLetterStore.from_dsn(pg_dsn)
        future = datetime.now(timezone.utc) + timedelta(days=1)
        store.save_sweep_state(SweepState(future, 0, False, None))  # nothing ended after it
        resolved: list[int] = []
        left = []
        for _ in range(10):
            _, got, _, behind = _sweep(pg_dsn, url, max_pages=3)
            assert behind.pages <= 3
            resolved.extend(got)
            left.append(behind.letters_unchecked)
            if behind.pass_complete:
                break
    assert sorted(resolved) == succeeded
    assert left[:3] == [250, 50, 0]  # 200 letters a sweep: the stream's page, then two of the pass


def test_a_500_mid_sweep_stops_it_and_the_next_sweep_continues_from_its_place(pg_dsn):
    """A 500 on the pass's second page: the sweep reports it, the letters before it stay checked, and the next sweep resolves the rest."""
    with fault_airflow(10.0) as (url, fake):
        succeeded = _resting(pg_dsn, url, fake, 300)
        store = DeadLetterStore.from_dsn(pg_dsn)
        future = datetime.now(timezone.utc) + timedelta(days=1)
        store.save_sweep_state(SweepState(future, 0, False, None))
        fake.plan[:] = ["ok", "ok", "500"]  # (sign-in takes none) the stream's page, then the pass's
        report, first, _, behind = _sweep(pg_dsn, url, max_pages=50)
        assert report.errors and "500" in report.errors[0]
        assert behind.letters_unchecked == 200 and not behind.pass_complete
        _, second, _, behind = _sweep(pg_dsn, url, max_pages=50)
    assert not set(first) & set(second)
    assert sorted(first + second) == succeeded and behind.pass_complete


def test_the_watermark_reads_only_what_ended_since_and_rereads_the_overlap(pg_dsn):
    """A second sweep with nothing changed reads two pages (the stream's, the pass's); a task that succeeded since is resolved."""
    with fault_airflow(10.0) as (url, fake):
        _resting(pg_dsn, url, fake, 30)
        _sweep(pg_dsn, url, max_pages=50)
        store = DeadLetterStore.from_dsn(pg_dsn)
        state = store.sweep_state()
        assert state.watermark is not None and state.caught_up
        _, resolved, _, behind = _sweep(pg_dsn, url, max_pages=50)
        assert not resolved and behind.pages == 2  # the stream's page and the pass's (30 letters)
        _set(fake, "r0001", "a", "success", 2)
        _, resolved, _, behind = _sweep(pg_dsn, url, max_pages=2)
    letter = store.get(resolved[0]) if resolved else None
    assert letter is not None and letter.run_id == "r0001" and letter.status == "resolved"


def test_sweeps_that_find_nothing_move_the_watermark_forward_never_back(pg_dsn):
    """A sweep that caught up leaves the watermark at now minus the overlap at least, and the next one does not move it back."""
    with fault_airflow(10.0) as (url, fake):
        _resting(pg_dsn, url, fake, 3)
        store = DeadLetterStore.from_dsn(pg_dsn)
        started = datetime.now(timezone.utc)
        _sweep(pg_dsn, url, max_pages=10)
        first = store.sweep_state().watermark
        _sweep(pg_dsn, url, max_pages=10)
        second = store.sweep_state().watermark
    assert first is not None and second is not None
    assert first >= started - timedelta(hours=1) - timedelta(seconds=5)  # the default overlap
    assert second >= first
