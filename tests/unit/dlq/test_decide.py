"""The pure decisions of the replay loop (dlq/decide.py), each checked without a database."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from airflow_retry_provider.dlq.decide import (
    Canary,
    CanaryState,
    FoundInstance,
    OpenClaim,
    ReplayingLetter,
    Step,
    SweepStep,
    canary_verdict,
    claim_refusal,
    cleared_by,
    failures_in_a_row,
    pace_wait,
    replaying_step,
    resolves_at_rest,
    status_after_failure,
    stop_rule,
    sweep_step,
)

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)
GRACE = timedelta(minutes=2)
TIMEOUT = timedelta(hours=24)


@dataclass(frozen=True)
class Ti:
    """A task instance as Airflow reports it: the four fields the decision reads."""

    state: str | None
    try_number: int
    end_date: datetime | None
    note: str | None


# a letter filed at try 2, claimed at try 2, cleared an hour ago, its task instance running try 3
DEFAULTS: dict[str, Any] = {
    "ti_state": "running",
    "ti_try_number": 3,
    "ti_end_date": None,
    "ti_note": None,
    "replay_id": 7,
    "replay_outcome": "pending",
    "cleared_at": NOW - timedelta(hours=1),
    "requested_at": NOW - timedelta(hours=1),
    "lease_expired": False,
}


def seen(**changes: Any) -> ReplayingLetter:
    """The replaying letter of DEFAULTS with ``changes`` (``replay_id=None``: no open claim)."""
    f = {**DEFAULTS, **changes}
    ti = Ti(f["ti_state"], f["ti_try_number"], f["ti_end_date"], f["ti_note"])
    claim = (
        OpenClaim(
            f["replay_id"], 2, f["replay_outcome"], f["cleared_at"], f["requested_at"], f["lease_expired"]
        )
        if f["replay_id"] is not None
        else None
    )
    return ReplayingLetter(2, ti, claim, NOW, GRACE, TIMEOUT)


ENDED = NOW - timedelta(minutes=10)
UNCONFIRMED = {"cleared_at": None, "ti_state": "failed", "ti_try_number": 2, "ti_end_date": ENDED}


@pytest.mark.parametrize(
    ("changes", "step"),
    [
        ({"ti_state": "success"}, Step.RESOLVE),  # Airflow says success
        ({"ti_state": "success", "replay_id": None}, Step.RESOLVE),  # success resolves even without a claim
        (
            {"ti_state": "failed", "ti_end_date": NOW - timedelta(seconds=30)},
            Step.WAIT,
        ),  # its callback's turn
        ({"ti_state": "failed", "ti_end_date": ENDED}, Step.REFILE),  # a newer failed try (3 > 2)
        ({"ti_state": "failed", "ti_end_date": ENDED, "replay_id": None}, Step.REFILE),  # newer try first
        ({"replay_id": None}, Step.RELEASE_UNCLAIMED),  # replaying with no open claim
        (UNCONFIRMED, Step.WAIT),  # the clear not confirmed, lease live: wait for its answer
        ({**UNCONFIRMED, "lease_expired": True}, Step.ABANDON),  # lease expired before any clear
        ({**UNCONFIRMED, "replay_outcome": "unknown"}, Step.ABANDON),  # the answer lost, no clear happened
        (
            {**UNCONFIRMED, "ti_note": "airflow-retry replay #7 by x: y"},
            Step.END_REPLAY,
        ),  # the note: it cleared
        ({**UNCONFIRMED, "ti_note": "airflow-retry replay #70 by x: y"}, Step.WAIT),  # another replay's note
        (
            {"ti_state": "upstream_failed", "ti_try_number": 2, "ti_end_date": ENDED},
            Step.END_REPLAY,
        ),  # no run
        (
            {"ti_state": "failed", "ti_try_number": 2, "ti_end_date": ENDED},
            Step.END_REPLAY,
        ),  # confirmed clear
        ({"ti_state": "skipped", "ti_end_date": ENDED}, Step.END_REPLAY),  # ended without succeeding
        ({"cleared_at": NOW - TIMEOUT}, Step.END_REPLAY),  # still running a whole timeout after the clear
        ({"cleared_at": None, "requested_at": NOW - TIMEOUT}, Step.END_REPLAY),  # timed out since the claim
        ({}, Step.WAIT),  # running after a confirmed clear
        ({"cleared_at": None, "lease_expired": True}, Step.MARK_UNKNOWN),  # moved on, clear never confirmed
        (
            {"cleared_at": None, "lease_expired": True, "replay_outcome": "unknown"},
            Step.WAIT,
        ),  # marked already
    ],
)
def test_replaying_step(changes: dict, step: Step) -> None:
    """What a task instance's state means for the replay of a replaying letter."""
    assert replaying_step(seen(**changes)).step is step


def test_abandon_says_why() -> None:
    """An abandoned claim says whether its answer was lost or its lease expired."""
    lost = replaying_step(seen(**UNCONFIRMED, replay_outcome="unknown"))
    expired = replaying_step(seen(**UNCONFIRMED, lease_expired=True))
    assert lost.lost and "answer was lost and Airflow shows try 2 still failed" in lost.detail
    assert not expired.lost and expired.detail == "the claim's lease expired before any clear: back to dlq"


def test_end_replay_says_why() -> None:
    """A failed replay's detail names how the task instance ended, or the timeout it waited."""
    ended = replaying_step(seen(ti_state="skipped", ti_end_date=ENDED))
    timed_out = replaying_step(seen(cleared_at=NOW - TIMEOUT))
    assert ended.detail == "the replayed task instance ended skipped at try 3 without succeeding"
    assert timed_out.detail == (
        "the replayed task instance is still running at try 3 86400 s after the clear: the replay timed out"
    )


@pytest.mark.parametrize(
    ("note", "expected"),
    [
        ("airflow-retry replay #7 by ana: fix (fix v2)", True),  # this replay's note
        ("airflow-retry replay #71 by ana: fix (fix v2)", False),  # another replay's, same prefix
        ("cleared by hand", False),  # a person's note
        (None, False),  # no note
    ],
)
def test_cleared_by(note: str | None, expected: bool) -> None:
    """Only this replay's own note says its clear happened."""
    assert cleared_by(note, 7) is expected


@pytest.mark.parametrize(
    ("status", "count", "expected"),
    [
        ("dlq", 0, None),  # at rest, never replayed
        ("dlq", 2, None),  # under the cap of 3
        ("dlq", 3, "replay cap reached (3)"),  # at the cap
        ("replaying", 0, "status is replaying, not dlq"),  # already being replayed
        ("parked", 0, "status is parked, not dlq"),  # parked: a person must act
        ("resolved", 0, "status is resolved, not dlq"),  # closed
    ],
)
def test_claim_refusal(status: str, count: int, expected: str | None) -> None:
    """Only a dlq letter under the replay cap may be claimed; the refusal says why."""
    assert claim_refusal(status, count, 3) == expected


@pytest.mark.parametrize(
    ("status", "count", "expected"),
    [
        ("replaying", 0, ("dlq", 1)),  # a failed replay counts
        ("replaying", 2, ("parked", 3)),  # and parks at the cap
        ("resolved", 1, ("dlq", 1)),  # a closed letter reopens, uncounted
        ("dismissed", 1, ("dlq", 1)),  # so does a dismissed one
        ("parked", 1, ("parked", 1)),  # parked keeps its status
        ("dlq", 1, ("dlq", 1)),  # dlq too
    ],
)
def test_status_after_failure(status: str, count: int, expected: tuple[str, int]) -> None:
    """A letter's status and replay count when its task instance fails again (cap 3)."""
    assert status_after_failure(status, count, 3) == expected


CANARY = CanaryState(
    letter_id=5,
    outcome="cleared",
    replay_id=9,
    detail=None,
    replay_outcome="pending",
    replay_detail=None,
    letter_status="replaying",
    letter_reason=None,
    overdue=False,
)


@pytest.mark.parametrize(
    ("changes", "verdict", "reason"),
    [
        ({"replay_outcome": "succeeded"}, Canary.PASSED, ""),  # resolved: the rest follow
        ({"replay_outcome": "succeeded", "overdue": True}, Canary.PASSED, ""),  # success wins a late look
        ({}, Canary.WAIT, ""),  # pending: look again
        (
            {"replay_outcome": "failed", "letter_status": "dlq", "letter_reason": "boom"},
            Canary.FAILED,
            "canary letter 5 failed: boom; it is dlq",
        ),  # the replay failed: its letter's reason
        (
            {
                "outcome": "clear-failed",
                "replay_outcome": "clear-failed",
                "replay_detail": "403",
                "letter_status": None,
            },
            Canary.FAILED,
            "canary letter 5 failed: 403",
        ),  # Airflow refused the clear
        (
            {"outcome": "refused", "replay_outcome": None, "letter_status": None},
            Canary.FAILED,
            "canary letter 5 failed: refused",
        ),  # not replayable: the item's outcome is the reason
        (
            {"overdue": True},
            Canary.UNDECIDED,
            "canary undecided: the outcome of canary letter 5 was not known within 60 s "
            "(replay_canary_timeout_seconds)",
        ),  # past its deadline
    ],
)
def test_canary_verdict(changes: dict, verdict: Canary, reason: str) -> None:
    """The canary passes on success, fails on a failed clear or replay, is undecided past its deadline."""
    decided = canary_verdict(replace(CANARY, **changes), 60)
    assert (decided.verdict, decided.reason) == (verdict, reason)


@pytest.mark.parametrize(
    ("outcomes", "failures", "stops"),
    [
        ([], 0, False),  # nothing decided yet
        (["succeeded", "failed", "failed"], 0, False),  # the newest succeeded
        (["failed", "abandoned", "succeeded"], 2, False),  # two in a row, then a success
        (["failed", "failed", "clear-failed"], 3, True),  # three in a row: stop
    ],
)
def test_stop_rule(outcomes: list[str], failures: int, stops: bool) -> None:
    """Three replays of a job failed in a row stop it; a success breaks the run."""
    assert failures_in_a_row(outcomes) == failures
    reason = stop_rule(failures)
    assert (reason is not None) is stops
    if stops:
        assert reason == "stop rule: 3 replays of this job failed in a row"


@pytest.mark.parametrize(
    ("found", "step"),
    [
        (FoundInstance("success", ENDED, managed=False), SweepStep.RESOLVE_AT_REST),  # any DAG's success
        (
            FoundInstance("failed", ENDED, managed=True),
            SweepStep.FILE,
        ),  # a managed failure, ended a while ago
        (FoundInstance("failed", None, managed=True), SweepStep.FILE),  # no end date: filed
        (
            FoundInstance("failed", NOW - timedelta(seconds=30), managed=True),
            SweepStep.LEAVE,
        ),  # callback's turn
        (FoundInstance("failed", ENDED, managed=False), SweepStep.LEAVE),  # a DAG the sweep does not manage
    ],
)
def test_sweep_step(found: FoundInstance, step: SweepStep) -> None:
    """A sweep resolves on success, files a managed failure past the grace, leaves the rest."""
    assert sweep_step(found, NOW, GRACE) is step


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("dlq", True),  # at rest
        ("parked", True),  # at rest
        ("replaying", False),  # the sync decides it
        ("resolved", False),  # already closed
        ("dismissed", False),  # a person closed it
    ],
)
def test_resolves_at_rest(status: str, expected: bool) -> None:
    """Only letters at rest are resolved by a success a sweep finds."""
    assert resolves_at_rest(status) is expected


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ({"replay_id": None}, None),  # replaying with no open claim
        (
            {"replay_id": 7, "try_number_before": 2, "replay_outcome": "unknown", "lease_expired": None},
            OpenClaim(7, 2, "unknown", None, None, False),
        ),  # the answer lost, never confirmed; a NULL lease reads as not expired
    ],
)
def test_open_claim_from_row(row: dict[str, Any], expected: OpenClaim | None) -> None:
    """A row of the replaying letters gives its open claim, or None without one."""
    assert OpenClaim.from_row(row) == expected


@pytest.mark.parametrize(
    ("clears", "window_wait", "since_last", "rate", "expected"),
    [
        (0, 0.0, 120.0, 60, 0.0),  # nothing sent for two minutes: a slot now
        (0, 0.0, 0.5, 60, 0.5),  # spaced: one a second at 60/min, the last half a second ago
        (2, 30.0, 40.0, 2, 30.0),  # the window is full: the oldest clear leaves it in 30 s
        (0, 0.0, 0.99, 1, 59.01),  # 1/min: a minute after the last clear
        (0, 0.0, 0.999, 60, 0.05),  # a wait is never shorter than 0.05 s (no busy loop)
    ],
)
def test_pace_wait_spaces_clears_and_caps_the_window(
    clears: int, window_wait: float, since_last: float, rate: int, expected: float
) -> None:
    """The deployment's pace: clears spaced 60/rate apart, at most rate in any 60 seconds."""
    assert pace_wait(clears, window_wait, since_last, rate) == pytest.approx(expected)
