"""Issue 25 item 2 on a real PostgreSQL, against a local Airflow that answers any state: no letter stays
``replaying``, no write lands on a step that did not happen, a sweep asks once per open letter."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from airflow_retry_provider import settings
from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.dlq.replay import ReplayEngine, ReplayRequest
from airflow_retry_provider.dlq.store import DeadLetterStore, JobStore
from airflow_retry_provider.dlq.sync import OutcomeSync
from tests.integration.dlq import support
from tests.local_airflow import AnsweringAirflow, answering_airflow
from tests.one_by_one import resolve_succeeded_in_dlq, sync_outcomes

REQUEST = ReplayRequest("ana", "vendor fixed the feed", "v2")


@pytest.fixture
def fake():
    with answering_airflow() as served:
        yield served


def _cleared(
    store: DeadLetterStore, fake: AnsweringAirflow, task_id: str = "load", cap: int = 3
) -> tuple[int, int]:
    """A letter of ``etl.<task_id>`` claimed and cleared (Airflow confirmed): its id and its replay's."""
    letter_id = store.file(support.letter(task_id=task_id), replay_cap=cap).letter_id
    fake.set("etl", "r1", task_id, "failed", 1)
    engine = ReplayEngine(store, fake.api(), replay_cap=cap, lease_seconds=60)
    letter = store.get(letter_id)
    assert letter is not None
    replay_id = engine.claim(letter, REQUEST)
    assert replay_id is not None
    assert engine.clear(engine.require_api(), letter, replay_id, REQUEST).outcome == "cleared"
    return letter_id, replay_id


@pytest.mark.parametrize(
    ("state", "try_number"),
    [
        ("upstream_failed", 2),  # its upstream failed again after the clear
        ("skipped", 2),  # a branch skipped it this time
        ("removed", 2),  # the task left the DAG
        ("failed", 1),  # failed at the claimed try: the clear took no new try (the run was failed)
    ],
)
def test_a_cleared_letter_whose_task_ends_without_succeeding_leaves_replaying_counted(
    pg_dsn, fake, state, try_number
):
    """After a confirmed clear, a task instance ending upstream_failed/skipped/removed/failed-at-the-claimed-try is a failed replay: dlq, one replay counted."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    letter_id, replay_id = _cleared(store, fake)
    fake.set("etl", "r1", "load", state, try_number)
    report = sync_outcomes(OutcomeSync(store, fake.api(), replay_cap=3))
    letter = store.get(letter_id)
    assert letter is not None and (letter.status, letter.replay_count) == ("dlq", 1)
    assert report.refiled == (letter_id,)
    (replay,) = store.replays(letter_id)
    assert (replay.id, replay.outcome) == (replay_id, "failed") and state in (replay.detail or "")
    assert [e.event for e in store.events(letter_id)][-1] == "failed-again"


def test_a_failed_replay_at_the_cap_is_parked(pg_dsn, fake):
    """The same end at the replay cap parks the letter."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    letter_id, _ = _cleared(store, fake, cap=1)
    fake.set("etl", "r1", "load", "upstream_failed", 2)
    sync_outcomes(OutcomeSync(store, fake.api(), replay_cap=1))
    letter = store.get(letter_id)
    assert letter is not None and (letter.status, letter.replay_count) == ("parked", 1)


def test_a_cleared_task_instance_that_never_ends_times_the_replay_out(pg_dsn, fake):
    """Queued for ever after a confirmed clear: within the replay timeout it waits, past it the replay failed (dlq, counted)."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    letter_id, replay_id = _cleared(store, fake)  # Airflow now shows it queued at try 2
    patient = OutcomeSync(store, fake.api(), replay_cap=3, replay_timeout=timedelta(hours=1))
    assert sync_outcomes(patient).waiting == (letter_id,)
    impatient = OutcomeSync(store, fake.api(), replay_cap=3, replay_timeout=timedelta(0))
    assert sync_outcomes(impatient).refiled == (letter_id,)
    letter = store.get(letter_id)
    assert letter is not None and (letter.status, letter.replay_count) == ("dlq", 1)
    (replay,) = store.replays(letter_id)
    assert (replay.id, replay.outcome) == (replay_id, "failed") and "timed out" in (replay.detail or "")


def test_undecided_replaying_letters_cannot_starve_the_others(pg_dsn, fake):
    """Letters Airflow keeps running do not hide the one that succeeded: one pass, one page of 1, asks each letter once."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    running = [_cleared(store, fake, task_id=f"slow{n}")[0] for n in range(3)]
    done, _ = _cleared(store, fake, task_id="quick")  # the newest updated_at: last in the old order
    for n in range(3):
        fake.set("etl", "r1", f"slow{n}", "running", 2)
    fake.set("etl", "r1", "quick", "success", 2)
    fake.calls.clear()
    report = sync_outcomes(OutcomeSync(store, fake.api(), replay_cap=3), limit=1)
    assert report.resolved == (done,) and sorted(report.waiting) == running
    assert fake.calls["task_instance"] == 4
    assert store.get(done).status == "resolved"  # type: ignore[union-attr]


def test_a_clear_confirmed_after_its_claim_was_abandoned_is_claimed_again_and_counts(pg_dsn, fake):
    """Another process abandons a claim while its clear is in flight past the lease: the late clear reopens that replay and the letter is replaying, so its failure counts."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    letter_id = store.file(support.letter(), replay_cap=3).letter_id
    fake.set("etl", "r1", "load", "failed", 1)
    engine = ReplayEngine(store, fake.api(), replay_cap=3, lease_seconds=1)
    letter = store.get(letter_id)
    assert letter is not None
    replay_id = engine.claim(letter, REQUEST)
    assert replay_id is not None

    def other_driver_settles() -> None:  # the lease runs out mid-clear; Airflow still shows try 1 failed
        time.sleep(1.5)
        assert sync_outcomes(
            OutcomeSync(store, fake.api(), replay_cap=3), open_claims_only=True
        ).released == (letter_id,)

    fake.on_clear = other_driver_settles
    result = engine.clear(engine.require_api(), letter, replay_id, REQUEST)
    assert result.outcome == "cleared"
    now = store.get(letter_id)
    assert now is not None and now.status == "replaying"
    (reopened,) = store.replays(letter_id)  # the abandoned replay is open again: its clear did happen
    assert reopened.id == replay_id and reopened.outcome == "pending" and reopened.cleared_at is not None
    assert "cleared" in [e.event for e in store.events(letter_id)][-1:]
    again = store.file(support.letter(try_number=2), replay_cap=3)  # the rerun fails
    assert (again.status, again.replay_count) == ("dlq", 1)


def test_a_clear_confirmed_after_its_rerun_already_failed_is_not_claimed_again(pg_dsn, fake):
    """The rerun fails and its callback files before Airflow's answer to the clear reaches the driver (a slow
    api-server): that failure closed the replay, counted once; the late answer only stamps the clear, so the
    letter stays in dlq with one replay, not replaying under a second one (seen on CI, Airflow 3.4.0b2)."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    letter_id = store.file(support.letter(), replay_cap=3).letter_id
    fake.set("etl", "r1", "load", "failed", 1)
    engine = ReplayEngine(store, fake.api(), replay_cap=3)
    letter = store.get(letter_id)
    assert letter is not None
    replay_id = engine.claim(letter, REQUEST)
    assert replay_id is not None

    def rerun_fails_first() -> None:
        fake.set("etl", "r1", "load", "failed", 2)
        assert (store.file(support.letter(try_number=2), replay_cap=3).replay_count) == 1

    fake.on_clear = rerun_fails_first
    assert engine.clear(engine.require_api(), letter, replay_id, REQUEST).outcome == "cleared"
    now = store.get(letter_id)
    assert now is not None and (now.status, now.replay_count) == ("dlq", 1)
    (replay,) = store.replays(letter_id)
    assert (replay.id, replay.outcome) == (replay_id, "failed") and replay.cleared_at is not None
    assert [e.event for e in store.events(letter_id)][-2:] == ["failed-again", "cleared"]


def test_a_cancel_between_renew_and_claim_leaves_the_letter_in_dlq(pg_dsn, fake):
    """A cancel that lands after the driver renewed its lease: the claim is refused, the letter stays in dlq as the cancel said."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    letter_id = store.file(support.letter(), replay_cap=3).letter_id
    jobs = JobStore(store.db)
    letter = store.get(letter_id)
    assert letter is not None
    job_id = jobs.create(REQUEST, [letter])
    assert jobs.claim("driver-1", 60, job_id) is not None and jobs.turn(job_id, "driver-1", 60) is not None
    assert jobs.cancel(job_id, "bia") == 1  # reported as left in dlq
    claim = ReplayEngine(store, fake.api(), replay_cap=3).claim_paced(
        letter, REQUEST, job_id=job_id, position=0
    )
    assert claim.replay_id is None
    assert store.get(letter_id).status == "dlq" and store.replays(letter_id) == []  # type: ignore[union-attr]
    assert fake.calls["clear"] == 0


def test_a_cancel_during_a_clear_closes_its_item_and_the_counts_add_up(pg_dsn, fake):
    """A job cancelled while one item's clear is in flight: that item is unknown (its replay tells), none stays pending."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    ids = [store.file(support.letter(task_id=t), replay_cap=3).letter_id for t in ("a", "b")]
    jobs = JobStore(store.db)
    job_id = jobs.create(REQUEST, [store.get(i) for i in ids])  # type: ignore[misc]
    assert jobs.claim("driver-1", 60, job_id) is not None
    first = store.get(ids[0])
    assert first is not None
    claim = ReplayEngine(store, fake.api(), replay_cap=3).claim_paced(
        first, REQUEST, job_id=job_id, position=0
    )
    assert claim.replay_id is not None
    assert jobs.cancel(job_id, "bia") == 1
    view = jobs.require(job_id)
    assert [i.outcome for i in view.items] == ["unknown", "cancelled"]
    assert sum(view.counts.values()) == len(view.items)


def test_park_or_dismiss_during_a_confirmed_replay_is_refused_not_abandoned(pg_dsn, fake):
    """While a cleared task instance runs, park and dismiss change nothing: the replay stays pending, never 'abandoned'."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    letter_id, replay_id = _cleared(store, fake)
    assert store.park([letter_id], "ana", "looks stuck") == []
    assert store.dismiss([letter_id], "ana", "obsolete") == []
    (replay,) = store.replays(letter_id)
    assert (replay.id, replay.outcome) == (replay_id, "pending")
    assert store.get(letter_id).status == "replaying"  # type: ignore[union-attr]


def test_letters_at_rest_whose_task_succeeded_are_resolved_with_one_call_each(pg_dsn, fake):
    """A dlq and a parked letter whose task instances succeeded are resolved; the sweep asks once per open letter, never a DAG's history."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    ids = [store.file(support.letter(task_id=t), replay_cap=3).letter_id for t in ("a", "b", "c")]
    assert store.park([ids[1]], "ana", "vendor ticket") == [ids[1]]
    fake.set("etl", "r1", "a", "success", 2)
    fake.set("etl", "r1", "b", "success", 2)
    fake.set("etl", "r1", "c", "failed", 1)
    resolved = resolve_succeeded_in_dlq(OutcomeSync(store, fake.api(), replay_cap=3), limit=2)
    assert resolved == ids[:2]
    assert [store.get(i).status for i in ids] == ["resolved", "resolved", "dlq"]  # type: ignore[union-attr]
    assert (fake.calls["task_instance"], fake.calls["other"]) == (3, 0)


def test_a_vanished_task_instance_parks_a_cleared_letter(pg_dsn, fake):
    """A 404 after a confirmed clear parks the letter and closes its replay failed (park by a person would be refused)."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    letter_id, _ = _cleared(store, fake)
    fake.instances.clear()
    sync_outcomes(OutcomeSync(store, fake.api(), replay_cap=3))
    assert store.get(letter_id).status == "parked"  # type: ignore[union-attr]
    assert [r.outcome for r in store.replays(letter_id)] == ["failed"]


@pytest.mark.parametrize(
    ("lease", "timeout", "expected"),
    [
        ("90", "30", 30),  # exactly three timeouts
        ("60", "", 20),  # unset: a third of the lease
        ("600", "", 30),  # unset: at most 30
    ],
)
def test_the_api_timeout_fits_three_times_in_the_lease(monkeypatch, lease, timeout, expected):
    """The timeout the REST client uses is one the lease holds three times."""
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__REPLAY_LEASE_SECONDS", lease)
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__API_TIMEOUT_SECONDS", timeout)
    assert settings.api_timeout() == expected


def test_a_lease_shorter_than_three_api_timeouts_is_refused_naming_both(monkeypatch):
    """replay_lease_seconds=60 with api_timeout_seconds=30: settings refuse to load, naming both settings and values."""
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__REPLAY_LEASE_SECONDS", "60")
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__API_TIMEOUT_SECONDS", "30")
    with pytest.raises(ValueError, match=r"replay_lease_seconds=60 and api_timeout_seconds=30"):
        settings.check_all()
    with pytest.raises(ValueError, match=r"replay_lease_seconds must be at least 3 x"):
        ReplayEngine(DeadLetterStore(ProviderDatabase(lambda: None)))
