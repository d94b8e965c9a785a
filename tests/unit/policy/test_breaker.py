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
    """The first task after the cool-down probes (half-open); a second is held for the slack, not a cool-down."""
    admission, half = machine.admit(opened(), "a", at(60), S)
    assert (admission.kind, half.status, half.probe_key, half.probe_until) == (
        "probe",
        HALF_OPEN,
        "a",
        at(960),
    )
    other, same = machine.admit(half, "b", at(61), S)
    assert (other.kind, other.until, same) == ("hold", at(61 + machine.WAKE_SLACK_SECONDS), half)
    again, _ = machine.admit(half, "a", at(62), S)  # the probe itself, retried, may run
    assert again.kind == "probe"


@pytest.mark.parametrize(
    ("breaker", "now", "leads", "expected"),
    [
        # open: the longest-held task wakes at the probe time, to be the probe ...
        (Breaker(OPEN, 60, T0, at(60)), at(10), True, at(60)),
        # ... the others a slack later, when the probe has had time to end
        (Breaker(OPEN, 60, T0, at(60)), at(10), False, at(75)),
        # after two failed probes the cool-down is 240 s: still the next probe, not a cool-down of its own
        (Breaker(OPEN, 240, T0, at(500)), at(300), False, at(515)),
        # a cool-down shorter than the slack bounds it
        (Breaker(OPEN, 5, T0, at(5)), at(1), False, at(10)),
        # half-open: look again after the slack, whatever the cool-down
        (Breaker(HALF_OPEN, 1800, T0, None, "p", at(900)), at(100), True, at(115)),
        # half-open: never after the probe's claim lapses (then another task may probe)
        (Breaker(HALF_OPEN, 60, T0, None, "p", at(105)), at(100), False, at(105)),
        # forced open: no probe is coming; a cool-down of the settings
        (Breaker(OPEN, 60, T0, at(60), forced="open"), at(10), True, at(70)),
        # closed: nothing to wait for
        (Breaker(), at(10), False, at(10)),
    ],
)
def test_a_held_task_wakes_at_the_next_probe_plus_a_bounded_slack(breaker, now, leads, expected):
    """A held task's wake time follows the breaker's next probe (plus at most the slack), never a growing cool-down."""
    settings = BreakerSettings(cooldown_seconds=min(breaker.cooldown_seconds or 60, 60))
    assert machine.wake_at(breaker, now, settings, leads=leads) == expected


def test_an_outage_releases_every_held_task_within_30_s_of_the_close_with_one_look_per_probe():
    """A 90 s outage, 20 held tasks, 3 s probes: the probe at 60 s fails, the one at about 183 s closes; all start within 30 s, one look per probe."""
    breaker = opened()
    wake = {task: at(1) for task in range(20)}  # each asks first at 1 s
    looks = dict.fromkeys(range(20), 0)
    started: dict[int, datetime] = {}
    probe: tuple[int, datetime] | None = None  # the task probing and when it started
    closed_at = None
    for second in range(2, 600):
        now = at(second)
        if probe is not None and now - probe[1] >= timedelta(seconds=3):  # the probe ends
            key = str(probe[0])
            if now >= at(90):  # the service is back
                breaker, closed_at = machine.after_success(breaker, key), now
                started[probe[0]] = probe[1]
            else:
                breaker = machine.after_failure(breaker, Window(1, 1), now, S, key=key)
                wake[probe[0]] = now  # its retry asks again at once (and is held)
            probe = None
        held = sorted(task for task in wake if task not in started and (probe is None or task != probe[0]))
        for task in held:
            if wake[task] > now:
                continue
            looks[task] += 1
            # the store's leader: the longest held (here the lowest number still held)
            admission, breaker = machine.admit(breaker, str(task), now, S, leads=task == held[0])
            if admission.kind == "hold":
                wake[task] = admission.until
            elif admission.kind == "probe":
                probe = (task, now)
            else:
                started[task] = now
        if len(started) == 20:
            break
    assert closed_at is not None and len(started) == 20
    assert max(started.values()) - closed_at <= timedelta(seconds=30)
    # its first ask, then one look per probe (two probes); the first probe's task asks once more for its retry
    assert max(looks[task] for task in range(1, 20)) == 1 + 2
    assert looks[0] == 1 + 2 + 1


@pytest.mark.parametrize(
    ("breaker", "held"),
    [
        # open: the failed try waits for the next probe
        (Breaker(OPEN, 60, T0, at(60)), True),
        # forced open: the same
        (Breaker(CLOSED, forced="open"), True),
        # half-open, another task probes: this one started before the outage and waits too
        (Breaker(HALF_OPEN, 60, T0, None, "other", at(900)), True),
        # the probe's own failure must reach the failure callback (it reopens the breaker)
        (Breaker(HALF_OPEN, 60, T0, None, "me", at(900)), False),
        # closed: the retry policy decides, as on 3.3 (this failure may be the one that opens it)
        (Breaker(), False),
        # forced closed: work runs whatever the window says
        (Breaker(OPEN, 60, T0, at(60), forced="closed"), False),
    ],
)
def test_which_failed_tries_the_breaker_holds(breaker, held):
    """A failed try is held (3.4's reschedule) while the breaker is open, never the probe's own nor while closed."""
    assert machine.holds_failed_try(breaker, "me") is held


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
