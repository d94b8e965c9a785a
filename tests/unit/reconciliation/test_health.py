"""Connector health: runs from events, the window, percentiles like PostgreSQL, thresholds, isolation."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_retry_provider.reconciliation import (
    ConnectorHealth,
    EventLog,
    ExtractionEvent,
    SnapshotError,
    connector_health,
    health_status,
    percentile_cont,
)

AS_OF = datetime(2026, 12, 1, tzinfo=timezone.utc)
DAY = timedelta(hours=24)


def ev(
    run_id: str,
    start: datetime,
    duration_ms: int,
    status: str = "ok",
    *,
    conn: str = "c1",
    ws: str = "w1",
) -> ExtractionEvent:
    return ExtractionEvent(ws, conn, run_id, "fetch", start, duration_ms, status)  # type: ignore[arg-type]


def only(report: list[ConnectorHealth]) -> ConnectorHealth:
    assert len(report) == 1
    return report[0]


# --------------------------------------------------------------------------- percentiles


@pytest.mark.parametrize(
    ("values", "fraction", "hand", "postgres"),
    [
        # no values: null, like percentile_cont over no rows
        ([], 0.5, None, None),
        # one value: every percentile is that value
        ([100.0], 0.95, 100.0, 100.0),
        # pos = 0.5 * 1 = 0.5: halfway between 10 and 20
        ([10.0, 20.0], 0.5, 15.0, 15.0),
        # pos = 0.95 * 1 = 0.95: 10 + 0.95 * 10
        ([10.0, 20.0], 0.95, 19.5, 19.5),
        # pos = 0.5 * 3 = 1.5: halfway between 2000 and 3000
        ([1000.0, 2000.0, 3000.0, 10000.0], 0.5, 2500.0, 2500.0),
        # pos = 2.85: 3000 + 0.85 * 7000 = 8950; PostgreSQL's double is 8949.999999999996
        ([1000.0, 2000.0, 3000.0, 10000.0], 0.95, 8950.0, 8949.999999999996),
        # pos = 2 exactly: the middle value, no interpolation
        ([100.0, 200.0, 300.0, 400.0, 1000.0], 0.5, 300.0, 300.0),
        # pos = 3.8: 400 + 0.8 * 600 = 880; PostgreSQL's double is 879.9999999999999
        ([100.0, 200.0, 300.0, 400.0, 1000.0], 0.95, 880.0, 879.9999999999999),
        # pos = 0.95 * 19 = 18.05: 190 + 0.05 * 10
        ([10.0 * i for i in range(1, 21)], 0.95, 190.5, 190.5),
        # pos = 2.85: 3 + 0.85 * 1 = 3.85; PostgreSQL's double is 3.8499999999999996
        ([1.0, 2.0, 3.0, 4.0], 0.95, 3.85, 3.8499999999999996),
        # fraction 0 is the minimum
        ([1.0, 2.0, 3.0, 4.0], 0.0, 1.0, 1.0),
        # fraction 1 is the maximum
        ([1.0, 2.0, 3.0, 4.0], 1.0, 4.0, 4.0),
        # repeated values interpolate to themselves
        ([5.0, 5.0, 5.0], 0.95, 5.0, 5.0),
    ],
)
def test_percentile_cont_matches_hand_computed_and_postgres(
    values: list[float], fraction: float, hand: float | None, postgres: float | None
) -> None:
    """Linear interpolation at p * (n - 1) gives the hand value and PostgreSQL 15's exact double."""
    result = percentile_cont(values, fraction)
    assert result == postgres
    assert result == (None if hand is None else pytest.approx(hand, rel=1e-12))


@pytest.mark.parametrize("fraction", [-0.01, 1.01])
def test_percentile_cont_rejects_fraction_outside_unit_interval(fraction: float) -> None:
    """A fraction outside [0, 1] is an error, as in PostgreSQL."""
    with pytest.raises(ValueError, match="between 0 and 1"):
        percentile_cont([1.0], fraction)


def test_report_percentiles_over_run_durations() -> None:
    """p50 and p95 are computed over run durations (first start to last finish), hand-checked."""
    base = AS_OF - timedelta(hours=2)
    events = [ev(f"r{i}", base + timedelta(minutes=i), ms) for i, ms in enumerate((10000, 1000, 3000, 2000))]
    health = only(connector_health(events, AS_OF))
    assert health.p50_ms == 2500.0
    assert health.p95_ms == pytest.approx(8950.0, rel=1e-12)


def test_run_duration_keeps_sub_millisecond_precision() -> None:
    """Durations use whole microseconds / 1000, the same double as PostgreSQL's epoch * 1000."""
    start = AS_OF - timedelta(hours=1, microseconds=500)
    events = [ev("r1", start, 1000), ev("r1", start + timedelta(microseconds=123), 2000)]
    assert only(connector_health(events, AS_OF)).p50_ms == 2000.123


# --------------------------------------------------------------------------- runs and the window


def test_run_spans_first_start_to_last_finish() -> None:
    """Events of one run_id form one run from the first start to the last start + duration."""
    start = AS_OF - timedelta(hours=3)
    events = [ev("r1", start + timedelta(seconds=5), 2000), ev("r1", start, 1000)]
    health = only(connector_health(events, AS_OF))
    assert (health.runs, health.failed_runs, health.error_rate) == (1, 0, 0.0)
    assert health.p50_ms == 7000.0
    assert health.last_run_at == start + timedelta(seconds=7)
    assert health.freshness_seconds == 3 * 3600 - 7
    assert health.status == "healthy"


def test_any_error_event_fails_the_run() -> None:
    """One error event makes the whole run failed; with no successful run freshness is null."""
    start = AS_OF - timedelta(hours=1)
    health = only(connector_health([ev("r1", start, 10), ev("r1", start, 20, "error")], AS_OF))
    assert (health.runs, health.failed_runs, health.error_rate) == (1, 1, 1.0)
    assert health.freshness_seconds is None
    assert health.last_run_at == start + timedelta(milliseconds=20)
    assert health.status == "failing"


def test_freshness_uses_latest_successful_run_and_last_run_any_run() -> None:
    """last_run_at is the latest finish of any run; freshness counts from the latest successful one."""
    events = [
        ev("ok", AS_OF - timedelta(hours=4), 0),
        ev("bad", AS_OF - timedelta(hours=2), 0, "error"),
    ]
    health = only(connector_health(events, AS_OF))
    assert health.last_run_at == AS_OF - timedelta(hours=2)
    assert health.freshness_seconds == 4 * 3600.0


@pytest.mark.parametrize(
    ("start", "duration_ms", "runs", "listed"),
    [
        # finishing exactly at as_of: the window is closed at its end
        (AS_OF - timedelta(seconds=1), 1000, 1, True),
        # finishing exactly at as_of - window: the window is open at its start, so stopped
        (AS_OF - DAY - timedelta(seconds=1), 1000, 0, True),
        # finishing one millisecond inside the window start
        (AS_OF - DAY - timedelta(seconds=1), 1001, 1, True),
        # started before the window, finished inside: counted
        (AS_OF - DAY - timedelta(hours=1), 2 * 3600 * 1000, 1, True),
        # started before as_of, finishing after it: not seen yet, not listed
        (AS_OF - timedelta(seconds=1), 1001, 0, False),
        # started after as_of: ignored, not listed
        (AS_OF + timedelta(seconds=1), 0, 0, False),
    ],
)
def test_window_boundaries(start: datetime, duration_ms: int, runs: int, listed: bool) -> None:
    """A run counts when its finish is in (as_of - window, as_of]; events finishing later are ignored."""
    report = connector_health([ev("r1", start, duration_ms)], AS_OF, window=DAY)
    if not listed:
        assert report == []
        return
    health = only(report)
    assert health.runs == runs
    assert health.status == ("stopped" if runs == 0 else "healthy")


def test_window_length_is_a_parameter() -> None:
    """A shorter window leaves out runs the default 24 hours would count."""
    events = [ev("r1", AS_OF - timedelta(hours=5), 0), ev("r2", AS_OF - timedelta(hours=1), 0)]
    assert only(connector_health(events, AS_OF)).runs == 2
    assert only(connector_health(events, AS_OF, window=timedelta(hours=2))).runs == 1


def test_connector_silent_in_window_is_stopped_with_nulls() -> None:
    """A connector whose events all finished before the window is listed as stopped with null figures."""
    health = only(connector_health([ev("r1", AS_OF - timedelta(days=3), 5, "error")], AS_OF))
    assert health == ConnectorHealth("w1", "c1", 0, 0, None, None, None, None, None, "stopped")


def test_expected_connector_without_events_is_stopped() -> None:
    """An expected connector with no events at all is listed as stopped."""
    report = connector_health(
        [ev("r1", AS_OF - timedelta(hours=1), 5)], AS_OF, expected=[("w1", "c9"), ("w1", "c1")]
    )
    assert [(h.connector_id, h.status) for h in report] == [("c1", "healthy"), ("c9", "stopped")]
    assert report[1] == ConnectorHealth("w1", "c9", 0, 0, None, None, None, None, None, "stopped")


def test_runs_are_keyed_by_workspace_connector_and_run_id() -> None:
    """The same run_id under another connector or workspace is a different run; output is sorted."""
    start = AS_OF - timedelta(hours=1)
    events = [
        ev("r1", start, 10, conn="c2", ws="w2"),
        ev("r1", start, 10, "error", conn="c2"),
        ev("r1", start, 10, conn="c1"),
        ev("r1", start, 30, conn="c1", ws="w2"),
    ]
    report = connector_health(events, AS_OF)
    assert [(h.workspace_id, h.connector_id, h.runs, h.failed_runs) for h in report] == [
        ("w1", "c1", 1, 0),
        ("w1", "c2", 1, 1),
        ("w2", "c1", 1, 0),
        ("w2", "c2", 1, 0),
    ]


@pytest.mark.parametrize(
    ("runs", "failed", "status"),
    [
        (0, 0, "stopped"),  # no runs in the window
        (10, 0, "healthy"),  # no failures
        (11, 1, "healthy"),  # 1/11 = 0.09, just under the degraded threshold
        (10, 1, "degraded"),  # exactly 0.1: thresholds are inclusive
        (3, 1, "degraded"),  # 0.33
        (2, 1, "failing"),  # exactly 0.5: thresholds are inclusive
        (5, 4, "failing"),  # 0.8
        (1, 1, "failing"),  # every run failed
    ],
)
def test_status_thresholds(runs: int, failed: int, status: str) -> None:
    """failing at error_rate >= 0.5, degraded at >= 0.1, else healthy; stopped without runs."""
    assert health_status(runs, failed) == status
    events = [
        ev(f"r{i}", AS_OF - timedelta(minutes=i + 1), 0, "error" if i < failed else "ok") for i in range(runs)
    ]
    health = only(connector_health(events, AS_OF, expected=[("w1", "c1")]))
    assert health.status == status
    assert health.error_rate == (failed / runs if runs else None)


def test_rejects_naive_as_of_and_empty_window() -> None:
    """as_of must carry a timezone and the window must be positive."""
    with pytest.raises(ValueError, match="timezone-aware"):
        connector_health([], AS_OF.replace(tzinfo=None))
    with pytest.raises(ValueError, match="positive"):
        connector_health([], AS_OF, window=timedelta(0))


def test_health_round_trips_through_dict() -> None:
    """``ConnectorHealth.to_dict`` writes UTC ISO timestamps that ``from_dict`` reads back."""
    health = only(connector_health([ev("r1", AS_OF - timedelta(hours=1), 1500)], AS_OF))
    data = health.to_dict()
    assert data["last_run_at"] == "2026-11-30T23:00:01.500000+00:00"
    assert ConnectorHealth.from_dict(data) == health


# --------------------------------------------------------------------------- parsing


def _events() -> dict:
    return {
        "events": [
            {
                "workspace_id": "w1",
                "connector_id": "c1",
                "run_id": "r1",
                "operation": "fetch",
                "started_at": "2026-11-30T20:00:00-03:00",
                "duration_ms": 1500,
                "status": "ok",
            }
        ]
    }


def test_event_log_from_dict_parses_events_and_optional_connectors() -> None:
    """``connectors`` is optional; timestamps are normalised to UTC."""
    log = EventLog.from_dict(_events())
    assert log.connectors == ()
    assert log.events[0].started_at == AS_OF - timedelta(hours=1)
    assert log.events[0].finished_at == AS_OF - timedelta(hours=1) + timedelta(milliseconds=1500)
    document = {**_events(), "connectors": [{"workspace_id": "w1", "connector_id": "c9"}]}
    assert EventLog.from_dict(document).connectors == (("w1", "c9"),)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        # a negative duration
        ("duration_ms", -1, "events[0].duration_ms: -1 is not a non-negative integer"),
        # a fractional duration: whole milliseconds only
        ("duration_ms", 1.5, "events[0].duration_ms: 1.5 is not a non-negative integer"),
        # longer than PostgreSQL's integer column holds
        ("duration_ms", 2**31, "events[0].duration_ms: 2147483648 is larger than 2147483647"),
        # an unknown status
        ("status", "warn", "events[0].status: 'warn' is not one of 'ok', 'error'"),
        # a bad timestamp
        ("started_at", "noon", "events[0].started_at: 'noon' is not an ISO 8601 timestamp with offset"),
        # a missing field
        ("run_id", KeyError, "events[0].run_id: missing field"),
    ],
)
def test_event_log_from_dict_rejects_bad_events(field: str, value: object, message: str) -> None:
    """Bad events raise SnapshotError naming the field path and the bad value."""
    document = _events()
    if value is KeyError:
        del document["events"][0][field]
    else:
        document["events"][0][field] = value
    with pytest.raises(SnapshotError) as info:
        EventLog.from_dict(document)
    assert str(info.value) == message


def test_event_log_requires_events_and_well_formed_connectors() -> None:
    """``events`` is required and each expected connector needs both ids."""
    with pytest.raises(SnapshotError, match=r"^events: missing field$"):
        EventLog.from_dict({"connectors": []})
    with pytest.raises(SnapshotError, match=r"^connectors\[0\]\.connector_id: missing field$"):
        EventLog.from_dict({**_events(), "connectors": [{"workspace_id": "w1"}]})


# --------------------------------------------------------------------------- workspace isolation

WORKSPACES = ("w1", "w2", "w3")

_events_strategy = st.lists(
    st.builds(
        ExtractionEvent,
        workspace_id=st.sampled_from(WORKSPACES),
        connector_id=st.sampled_from(("c1", "c2")),
        run_id=st.sampled_from(("r1", "r2", "r3")),
        operation=st.just("fetch"),
        started_at=st.integers(-30 * 60, 30).map(lambda m: AS_OF + timedelta(minutes=m)),
        duration_ms=st.integers(0, 3_600_000),
        status=st.sampled_from(("ok", "error")),
    ),
    max_size=25,
)


@settings(max_examples=200, deadline=None)
@given(_events_strategy, st.lists(st.tuples(st.sampled_from(WORKSPACES), st.sampled_from(("c1", "c3")))))
def test_workspace_health_does_not_depend_on_other_workspaces(
    events: list[ExtractionEvent], expected: list[tuple[str, str]]
) -> None:
    """Each workspace's connector health is the same with or without the other workspaces' events."""
    full = connector_health(events, AS_OF, expected=expected)
    assert [(h.workspace_id, h.connector_id) for h in full] == sorted(
        {(h.workspace_id, h.connector_id) for h in full}
    )
    for ws in WORKSPACES:
        alone = connector_health(
            [e for e in events if e.workspace_id == ws], AS_OF, expected=[c for c in expected if c[0] == ws]
        )
        assert alone == [h for h in full if h.workspace_id == ws]
