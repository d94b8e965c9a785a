"""The breaker as a pure state machine: its transitions, its settings, and properties over any sequence of events."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_retry_provider.policy import breaker as machine
from airflow_retry_provider.policy.breaker import (
    CLOSED,
    HALF_OPEN,
    OPEN,
    Breaker,
    BreakerSettings,
    BreakerSettingsError,
    Window,
)

T0 = datetime(2026, 12, 1, 3, 0, tzinfo=timezone.utc)
S = BreakerSettings(enabled=True)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def opened(now: datetime = T0) -> Breaker:
    return machine.after_failure(Breaker(), Window(5, 6), now, S)


def test_the_window_trips_on_enough_failures_and_a_large_enough_share():
    """5 failures of 10 calls trip it (50 %); 4 failures never do; 5 of 11 calls do not (45 %)."""
    assert machine.trips(Window(5, 10), S)
    assert not machine.trips(Window(4, 4), S)
    assert not machine.trips(Window(5, 11), S)


def test_a_tripped_window_opens_the_breaker_until_its_cooldown():
    """Open for cooldown_seconds: a task asking before then is held until the probe time, with the reason."""
    breaker = opened()
    assert (breaker.status, breaker.opened_at, breaker.probe_at) == (OPEN, T0, at(60))
    admission, after = machine.admit(breaker, "dag/run/t/-1", at(30), S)
    assert (admission.kind, admission.until, after) == ("hold", at(60), breaker)
    assert "next probe at 2026-12-01T03:01:00Z" in admission.reason


def test_exactly_one_probe_after_the_cooldown_and_others_wait_for_it():
    """The first task after the cool-down probes (half-open); a second is held for at most a cool-down."""
    admission, half = machine.admit(opened(), "a", at(60), S)
    assert (admission.kind, half.status, half.probe_key, half.probe_until) == (
        "probe",
        HALF_OPEN,
        "a",
        at(960),
    )
    other, same = machine.admit(half, "b", at(61), S)
    assert (other.kind, other.until, same) == ("hold", at(121), half)
    again, _ = machine.admit(half, "a", at(62), S)  # the probe itself, retried, may run
    assert again.kind == "probe"


def test_the_probe_success_closes_and_its_failure_doubles_the_cooldown_up_to_the_cap():
    """Success: closed, outage over. Failure: open again for 120 s, then 240 s ..., never past max_cooldown_seconds."""
    _, half = machine.admit(opened(), "a", at(60), S)
    assert machine.after_success(half, "a") == Breaker()
    assert machine.after_success(half, "someone-else") == half
    reopened = machine.after_failure(half, Window(1, 1), at(70), S, key="a")
    assert (reopened.status, reopened.cooldown_seconds, reopened.probe_at, reopened.opened_at) == (
        OPEN,
        120,
        at(190),
        T0,
    )
    capped = BreakerSettings(enabled=True, cooldown_seconds=60, max_cooldown_seconds=100)
    _, half = machine.admit(opened(), "a", at(60), capped)
    assert machine.after_failure(half, Window(1, 1), at(70), capped, key="a").cooldown_seconds == 100


def test_a_probe_that_never_reports_loses_its_claim():
    """After probe_seconds the next task probes instead: half-open always ends."""
    _, half = machine.admit(opened(), "a", at(60), S)
    admission, taken = machine.admit(half, "b", at(60 + 900), S)
    assert (admission.kind, taken.probe_key) == ("probe", "b")


def test_a_probe_that_fails_for_another_reason_gives_up_its_claim():
    """A poison failure of the probe says nothing of the dependency: the next task probes at once."""
    _, half = machine.admit(opened(), "a", at(60), S)
    released = machine.after_other_failure(half, "a")
    assert (released.status, released.probe_key) == (HALF_OPEN, None)
    assert machine.admit(released, "b", at(61), S)[0].kind == "probe"


def test_forcing_wins_over_the_automatic_state_and_hands_back():
    """Forced open holds even a closed breaker; forced closed runs even an open one; None hands back."""
    forced_open = machine.force(Breaker(), "open", T0)
    assert machine.admit(forced_open, "a", at(1), S)[0].kind == "hold"
    assert machine.force(forced_open, None, at(2)) == Breaker()
    forced_closed = machine.force(opened(), "closed", at(5))
    assert machine.admit(forced_closed, "a", at(6), S)[0].kind == "run"
    assert machine.force(forced_closed, None, at(7)).effective == CLOSED


def test_a_disabled_breaker_never_holds():
    off = BreakerSettings(enabled=False)
    assert machine.after_failure(Breaker(), Window(100, 100), T0, off) == Breaker()
    assert machine.admit(opened(), "a", at(1), off)[0].kind == "run"


def test_hold_expiry_counts_from_the_first_hold():
    assert not machine.hold_expired(T0, at(3599), S)
    assert machine.hold_expired(T0, at(3600), S)
    assert not machine.hold_expired(None, at(99999), S)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"min_failures": 0}, "breaker.min_failures must be an integer from 1 to 604800, got 0"),
        ({"failure_ratio": 1.5}, "breaker.failure_ratio must be a number in (0, 1], got 1.5"),
        (
            {"cooldown_seconds": 600, "max_cooldown_seconds": 60},
            "from cooldown_seconds (600) to 604800, got 60",
        ),
        ({"window_secs": 10}, "breaker has unknown keys ['window_secs']"),
        ("yes", "breaker must be a mapping, true or false, got 'yes'"),
    ],
)
def test_bad_settings_name_the_field_and_the_value(value, message):
    with pytest.raises(BreakerSettingsError) as caught:
        BreakerSettings.from_value(value, "dependency 'positions_db'")
    assert message in str(caught.value)
    assert str(caught.value).startswith("dependency 'positions_db': ")


def test_settings_from_the_map_value():
    """Left out or false: off; true: the documented defaults; a mapping: those fields, on."""
    assert not BreakerSettings.from_value(None).enabled
    assert not BreakerSettings.from_value(False).enabled
    assert BreakerSettings.from_value(True) == BreakerSettings()
    assert BreakerSettings.from_value({"min_failures": 3}) == BreakerSettings(min_failures=3)


# -- properties over any sequence of events ---------------------------------------------------

KEYS = st.sampled_from(["a", "b", "c"])
EVENTS = st.lists(
    st.one_of(
        st.tuples(st.just("admit"), KEYS, st.integers(0, 2000)),
        st.tuples(st.just("fail"), KEYS, st.integers(0, 2000)),
        st.tuples(st.just("other"), KEYS, st.integers(0, 2000)),
        st.tuples(st.just("ok"), KEYS, st.integers(0, 2000)),
        st.tuples(st.just("force"), st.sampled_from(["open", "closed", None]), st.integers(0, 2000)),
    ),
    max_size=60,
)


@given(EVENTS)
def test_any_sequence_keeps_the_invariants(events):
    """Whatever happens: at most one probe, half-open always has a lapse time, the cool-down stays in
    range, and once nobody forces it and the probe succeeds, the breaker is closed."""
    breaker, now, failures = Breaker(), T0, 0
    for kind, arg, step in events:
        now += timedelta(seconds=step)
        if kind == "admit":
            _, breaker = machine.admit(breaker, arg, now, S)
        elif kind == "fail":
            failures += 1
            breaker = machine.after_failure(breaker, Window(failures, failures), now, S, key=arg)
        elif kind == "other":
            breaker = machine.after_other_failure(breaker, arg)
        elif kind == "ok":
            breaker = machine.after_success(breaker, arg)
        else:
            breaker = machine.force(breaker, arg, now)
        assert breaker.status in (CLOSED, OPEN, HALF_OPEN)
        if breaker.status == HALF_OPEN and breaker.probe_key is not None:
            assert breaker.probe_until is not None
        if breaker.status == CLOSED:
            assert (breaker.opened_at is None) or breaker.forced == "open"
        else:
            assert S.cooldown_seconds <= breaker.cooldown_seconds <= S.max_cooldown_seconds
            assert breaker.opened_at is not None
    # the exit: handed back, and after the cool-down a probe that succeeds closes it
    breaker = machine.force(breaker, None, now)
    later = now + timedelta(seconds=S.max_cooldown_seconds + S.probe_seconds)
    admission, breaker = machine.admit(breaker, "z", later, S)
    assert admission.kind in ("run", "probe")
    assert machine.after_success(breaker, "z").effective == CLOSED


def test_letters_of_one_outage_share_a_fingerprint_and_another_outage_has_its_own():
    """The outage fingerprint is stable for one (dependency, opened_at) and differs for another outage or dependency."""
    from airflow_retry_provider.policy.breaker import outage_fingerprint

    opened = datetime(2026, 11, 2, 9, 30, tzinfo=timezone.utc)
    first = outage_fingerprint("positions_db", opened)
    assert first == outage_fingerprint("positions_db", opened) and len(first) == 16
    assert first != outage_fingerprint("positions_db", opened + timedelta(minutes=5))
    assert first != outage_fingerprint("partner_api", opened)
