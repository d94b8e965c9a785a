"""Exact, deterministic backoff: FNV-1a jitter (the spec's), cap, overflow safety, validation and properties."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from collections import Counter
from datetime import timedelta
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_retry_provider.policy import Backoff, ScheduledDelay, fnv1a_32, jitter_fraction, jitter_hash
from airflow_retry_provider.policy.fields import show

MS = timedelta(milliseconds=1)


def microseconds(value: timedelta) -> int:
    return (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds


def reference_fnv1a_32(data: bytes) -> int:
    """FNV-1a 32-bit as published (http://www.isthe.com/chongo/tech/comp/fnv/): written here
    independently of the package, so the tests check the package against it."""
    h = 0x811C9DC5
    for octet in data:
        h ^= octet
        h = (h * 0x01000193) % 2**32
    return h


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", 0x811C9DC5),  # empty input: the offset basis itself
        (b"a", 0xE40C292C),  # published FNV-1a 32 test vector
        (b"b", 0xE70C2DE5),  # published FNV-1a 32 test vector
        (b"foobar", 0xBF9CF968),  # published FNV-1a 32 test vector
        (b"chongo was here!\n", 0xD49930D5),  # published FNV-1a 32 test vector
    ],
)
def test_fnv1a_32_vectors(data: bytes, expected: int) -> None:
    """fnv1a_32 gives the published FNV-1a 32-bit values, as does the test's own reference."""
    assert fnv1a_32(data) == expected == reference_fnv1a_32(data)


@pytest.mark.parametrize(
    "seed",
    [
        "job",  # ASCII
        "daily_sales/load/-1/2026-11-29T00:00:00+00:00--2026-11-30T00:00:00+00:00",  # a work-unit key
        "relatório_diário/carga/ção/ü/北京",  # non-ASCII: hashed as its UTF-8 bytes
        "x" * 5000,  # long
        "",  # empty: still hashes "#1"
    ],
)
def test_jitter_hash_is_fnv1a_of_seed_hash_attempt(seed: str) -> None:
    """The draw is FNV-1a 32 of f"{seed}#{attempt}" in UTF-8, for every attempt, as the spec says."""
    for attempt in (1, 2, 7, 1000):
        expected = reference_fnv1a_32(f"{seed}#{attempt}".encode())
        assert jitter_hash(seed, attempt) == expected
        assert jitter_fraction(seed, attempt) == Fraction(expected, 2**32)


def test_jitter_hash_takes_a_lone_surrogate() -> None:
    """A seed holding a lone surrogate hashes (as its code point), unlike the replacement character."""
    assert jitter_hash("run-\ud800", 1) != jitter_hash("run-\ufffd", 1)


def test_jitter_is_the_same_in_another_process() -> None:
    """Another interpreter, with another str hash salt, draws the same delays for the same work units."""
    seeds = ["job", "daily_sales/load/-1/2026-11-29T00:00:00Z--2026-11-30T00:00:00Z", "é/ü/3/run=manual"]
    program = (
        "import sys; from airflow_retry_provider.policy import Backoff; "
        "print([Backoff().delay(a, s).total_seconds() for s in sys.argv[1:] for a in (1, 2, 7)])"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", program, *seeds], capture_output=True, text=True, check=True, env=env
    )
    here = [Backoff().delay(a, s).total_seconds() for s in seeds for a in (1, 2, 7)]
    assert out.stdout.strip() == str(here)


def test_jitter_spreads_evenly() -> None:
    """The draws of 2,000 work units fill each tenth of [0, 1) about equally (no clustering)."""
    tenths = Counter(int(jitter_fraction(f"sales/load/{n}/2026-11-30", 1) * 10) for n in range(2000))
    assert sorted(tenths) == list(range(10))
    assert all(140 <= count <= 260 for count in tenths.values()), tenths


def test_delay_by_hand() -> None:
    """The default backoff after attempt 1 with seed 'job', computed step by step."""
    h = reference_fnv1a_32(b"job#1")
    assert h == 1139088084
    # nominal = 300 s = 300_000 ms; delay = 300_000 * (1 - (1/4) * h / 2**32), rounded down
    expected_ms = (300_000 * (4 * 2**32 - h)) // (4 * 2**32)
    assert expected_ms == 280_108
    assert Backoff().delay(1, "job") == timedelta(milliseconds=280_108)


@pytest.mark.parametrize(
    ("max_attempts", "expected_ms"),
    [
        # the spec's example (base 5 min, x2, cap 1 h, jitter 25 %, seed run-123), worked out with
        # the reference FNV-1a in test_spec_schedule_by_hand; before the BLAKE2b release, the same
        (8, [243_316, 486_046, 970_921, 1_939_498, 2_905_732, 2_902_216, 2_898_700]),
    ],
)
def test_spec_schedule(max_attempts: int, expected_ms: list[int]) -> None:
    """The spec's schedule for seed run-123: pinned delays (a change here changes production schedules)."""
    rows = Backoff().schedule(max_attempts, "run-123")
    assert [row.delay for row in rows] == [timedelta(milliseconds=ms) for ms in expected_ms]


def test_spec_schedule_by_hand() -> None:
    """Every delay of a long schedule is the formula computed with the test's own FNV-1a and fractions."""
    backoff = Backoff()
    for attempt in range(1, 14):
        nominal_ms = min(3_600_000, 300_000 * 2 ** (attempt - 1))
        u = Fraction(reference_fnv1a_32(f"run-123#{attempt}".encode()), 2**32)
        expected = math.floor(nominal_ms * (1 - Fraction(1, 4) * u))
        assert backoff.delay(attempt, "run-123") == timedelta(milliseconds=expected)


@pytest.mark.parametrize(
    ("attempt", "seed", "expected_ms"),
    [
        (1, "job", 280_108),  # nominal 5 min
        (2, "job", 558_459),  # nominal 10 min
        (3, "job", 1_118_091),  # nominal 20 min
        (10, "job", 2_905_096),  # far past the cap: nominal 1 h
        (1, "daily_sales|load|-1|2026-11-29T00:00:00+00:00/2026-11-30T00:00:00+00:00", 292_804),  # real seed
    ],
)
def test_default_backoff_exact_values(attempt: int, seed: str, expected_ms: int) -> None:
    """Pinned delays of the default backoff: a change here changes production schedules."""
    assert Backoff().delay(attempt, seed) == timedelta(milliseconds=expected_ms)


def test_nominal_grows_and_caps() -> None:
    """nominal = min(cap, base * multiplier ** (attempt - 1))."""
    backoff = Backoff()
    assert [backoff.nominal(n) for n in (1, 2, 3, 4, 5)] == [
        timedelta(minutes=5),
        timedelta(minutes=10),
        timedelta(minutes=20),
        timedelta(minutes=40),
        timedelta(hours=1),
    ]


def test_nominal_exactly_at_cap() -> None:
    """base * multiplier ** k equal to the cap is the cap, with no float error."""
    backoff = Backoff(base=timedelta(minutes=5), multiplier=2, cap=timedelta(minutes=80))
    assert backoff.nominal(5) == timedelta(minutes=80)


def test_no_jitter_is_nominal() -> None:
    """With jitter 0 the delay is the nominal delay."""
    backoff = Backoff(jitter=0)
    assert backoff.delay(3, "any") == timedelta(minutes=20)


def test_fractional_multiplier_is_exact() -> None:
    """1.5 is taken as exactly 3/2: 1 s * 1.5**2 = 2.25 s."""
    backoff = Backoff(base=timedelta(seconds=1), multiplier=1.5, cap=timedelta(hours=1), jitter=0)
    assert backoff.nominal(3) == timedelta(seconds=2.25)
    assert backoff.delay(3, "x") == timedelta(milliseconds=2250)


@pytest.mark.parametrize("attempt", [64, 1025, 10**6, 10**9])
def test_huge_attempt_is_capped(attempt: int) -> None:
    """A huge attempt number gives the cap without overflowing."""
    backoff = Backoff()
    assert backoff.nominal(attempt) == timedelta(hours=1)
    assert timedelta(minutes=45) < backoff.delay(attempt, "seed") <= timedelta(hours=1)


def test_multiplier_one_is_constant() -> None:
    """multiplier=1 gives the base delay after every attempt."""
    backoff = Backoff(base=timedelta(seconds=30), multiplier=1, cap=timedelta(minutes=1))
    assert backoff.nominal(10**6) == timedelta(seconds=30)


def test_jitter_spreads_at_cap() -> None:
    """Work units all at the cap still get different delays."""
    backoff = Backoff()
    delays = {backoff.delay(20, f"unit-{n}") for n in range(50)}
    assert len(delays) > 45


def test_jitter_fraction() -> None:
    """u is fnv1a_32(b"job#1") / 2**32."""
    assert jitter_fraction("job", 1) == Fraction(1139088084, 2**32)


def test_schedule() -> None:
    """schedule() lists attempts 1..max_attempts-1 with cumulative delays."""
    rows = Backoff().schedule(3, "job")
    assert rows == (
        ScheduledDelay(
            1, timedelta(minutes=5), timedelta(milliseconds=280_108), timedelta(milliseconds=280_108)
        ),
        ScheduledDelay(
            2,
            timedelta(minutes=10),
            timedelta(milliseconds=558_459),
            timedelta(milliseconds=280_108 + 558_459),
        ),
    )
    assert Backoff().schedule(1, "job") == ()


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"base": timedelta(seconds=-1)}, "base"),  # negative delay
        ({"base": 300}, "base"),  # seconds must be a timedelta
        ({"cap": timedelta(minutes=1)}, "cap"),  # cap below base
        ({"multiplier": 0.5}, "multiplier"),  # shrinking delays
        ({"multiplier": True}, "multiplier"),  # a bool is not a number
        ({"multiplier": float("nan")}, "multiplier"),  # not finite
        ({"multiplier": "2"}, "multiplier"),  # a string
        ({"jitter": 1.5}, "jitter"),  # more than the whole delay
        ({"jitter": -0.1}, "jitter"),  # negative jitter
    ],
)
def test_validation(kwargs: dict, field: str) -> None:
    """A bad parameter is refused with a message naming the field and the value."""
    with pytest.raises(ValueError, match=rf"^{field} must") as info:
        Backoff(**kwargs)
    assert show(next(iter(kwargs.values()))) in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        # the first case: a cap below the base
        (
            {"base": timedelta(minutes=1), "cap": timedelta(seconds=10)},
            "cap must be a timedelta >= base (1 min), got 10 s",
        ),
        # a negative base, not datetime.timedelta(days=-1, seconds=86100)
        ({"base": timedelta(minutes=-5)}, "base must be a timedelta >= 0, got -5 min"),
    ],
)
def test_durations_in_messages_are_in_the_users_words(kwargs: dict, message: str) -> None:
    """A bad duration is shown as written (``10 s``, ``-5 min``), never as ``datetime.timedelta(...)``."""
    with pytest.raises(ValueError) as info:
        Backoff(**kwargs)
    assert str(info.value) == message


@pytest.mark.parametrize("attempt", [0, -1, True, 1.0])
def test_attempt_validation(attempt: object) -> None:
    """The attempt must be an integer >= 1."""
    with pytest.raises(ValueError, match="attempt must be an integer"):
        Backoff().delay(attempt, "seed")  # type: ignore[arg-type]


backoffs = st.builds(
    lambda base_ms, factor, extra_ms, jitter_pct: Backoff(
        base=timedelta(milliseconds=base_ms),
        multiplier=factor,
        cap=timedelta(milliseconds=base_ms + extra_ms),
        jitter=jitter_pct / 100,
    ),
    st.integers(0, 10**7),
    st.sampled_from([1, 1.5, 2, 3, 10]),
    st.integers(0, 10**8),
    st.integers(0, 100),
)


@given(backoffs, st.integers(1, 10**6), st.text(max_size=40))
def test_delay_never_exceeds_cap(backoff: Backoff, attempt: int, seed: str) -> None:
    """delay <= nominal <= cap, for any attempt and seed."""
    delay = backoff.delay(attempt, seed)
    assert timedelta(0) <= delay <= backoff.nominal(attempt) <= backoff.cap


@given(backoffs, st.integers(1, 200), st.text(max_size=40))
def test_delay_above_jitter_floor(backoff: Backoff, attempt: int, seed: str) -> None:
    """delay > nominal * (1 - jitter) before rounding: so after rounding down, delay + 1 ms > it."""
    floor = Fraction(microseconds(backoff.nominal(attempt))) * (1 - Fraction(repr(backoff.jitter)))
    delay = microseconds(backoff.delay(attempt, seed))
    assert delay + 1000 > floor
    if backoff.jitter == 0 or backoff.nominal(attempt) == timedelta(0):
        assert delay == math.floor(floor / 1000) * 1000


@given(backoffs, st.integers(1, 10**6), st.text(max_size=40))
def test_delay_is_deterministic(backoff: Backoff, attempt: int, seed: str) -> None:
    """The same backoff, attempt and seed always give the same whole-millisecond delay."""
    copy = Backoff(backoff.base, backoff.multiplier, backoff.cap, backoff.jitter)
    delay = backoff.delay(attempt, seed)
    assert delay == copy.delay(attempt, seed)
    assert microseconds(delay) % 1000 == 0
