"""Exact, deterministic exponential backoff with a capped delay and a seeded jitter.

For ``attempt`` = the number of the attempt that just failed (1 for the first execution)::

    nominal = min(cap, base * multiplier ** (attempt - 1))
    u       = fnv1a_32(f"{seed}#{attempt}".encode("utf-8")) / 2**32      # FNV-1a 32-bit, 0 <= u < 1
    delay   = nominal * (1 - jitter * u), rounded down to whole milliseconds

This is the product spec's formula: deterministic on purpose, so a test (or an auditor) can
prove the exact value. The arithmetic is done on integers (microseconds, and the multiplier and
jitter as exact fractions of their decimal value: 1.5 is 3/2, 0.1 is 1/10), so the result is the
same on every machine, in every process and on every Python version; a huge ``attempt`` simply
gives the cap. No clock, no ``random``, no ``hash()`` (salted per process).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import timedelta
from fractions import Fraction

from airflow_retry_provider.policy.fields import show

FNV32_OFFSET_BASIS = 2166136261
FNV32_PRIME = 16777619
_TWO_TO_32 = 2**32
_MICROSECOND = timedelta(microseconds=1)


def fnv1a_32(data: bytes) -> int:
    """The 32-bit FNV-1a hash of ``data`` (offset basis 2166136261, prime 16777619)."""
    value = FNV32_OFFSET_BASIS
    for byte in data:
        value = ((value ^ byte) * FNV32_PRIME) % _TWO_TO_32
    return value


def jitter_hash(seed: str, attempt: int) -> int:
    """The jitter's draw for ``attempt`` of the work unit ``seed``: ``fnv1a_32`` of
    ``f"{seed}#{attempt}"`` in UTF-8, in [0, 2**32).

    A lone surrogate in ``seed`` is encoded as its code point (``surrogatepass``) rather than refused.
    """
    return fnv1a_32(f"{seed}#{attempt}".encode("utf-8", "surrogatepass"))


def jitter_fraction(seed: str, attempt: int) -> Fraction:
    """``u`` of the formula: ``jitter_hash(seed, attempt) / 2**32``, in [0, 1)."""
    return Fraction(jitter_hash(seed, attempt), _TWO_TO_32)


def _exact(value: float) -> Fraction:
    """The decimal value a person wrote: 1.5 -> 3/2, 0.1 -> 1/10 (not the binary float)."""
    return Fraction(value) if isinstance(value, int) else Fraction(repr(float(value)))


def _check_number(name: str, value: object, low: float, high: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value) or not low <= value <= high:
        raise ValueError(f"{name} must be between {low:g} and {high:g}, got {value!r}")


@dataclass(frozen=True)
class ScheduledDelay:
    """One row of a retry schedule.

    :param attempt: the attempt that failed (1-based); the next attempt is ``attempt + 1``.
    :param nominal: the delay before jitter, ``min(cap, base * multiplier ** (attempt - 1))``.
    :param delay: the jittered delay, whole milliseconds.
    :param cumulative: the sum of the delays up to and including this one.
    """

    attempt: int
    nominal: timedelta
    delay: timedelta
    cumulative: timedelta


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff: the delay after failed attempt ``n`` (see the module docstring).

    :param base: the nominal delay after the first failure (>= 0).
    :param multiplier: growth factor per failed attempt (1..1000; 1 is a constant delay).
    :param cap: the largest nominal delay (>= base); the delay never exceeds it.
    :param jitter: the largest fraction taken off the nominal delay (0..1; 0.25 = up to 25 %).
    """

    base: timedelta = timedelta(minutes=5)
    multiplier: float = 2
    cap: timedelta = timedelta(hours=1)
    jitter: float = 0.25
    # the multiplier and the jitter as exact fractions of their decimal value, set in __post_init__
    _exact_multiplier: Fraction = field(init=False, repr=False, compare=False)
    _exact_jitter: Fraction = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.base, timedelta) or self.base < timedelta(0):
            raise ValueError(f"base must be a timedelta >= 0, got {show(self.base)}")
        if not isinstance(self.cap, timedelta) or self.cap < self.base:
            raise ValueError(f"cap must be a timedelta >= base ({show(self.base)}), got {show(self.cap)}")
        _check_number("multiplier", self.multiplier, 1, 1000)
        _check_number("jitter", self.jitter, 0, 1)
        object.__setattr__(self, "_exact_multiplier", _exact(self.multiplier))
        object.__setattr__(self, "_exact_jitter", _exact(self.jitter))

    def _nominal_microseconds(self, attempt: int) -> Fraction:
        """Exact ``min(cap, base * multiplier ** (attempt - 1))``, in microseconds."""
        if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1:
            raise ValueError(f"attempt must be an integer >= 1, got {attempt!r}")
        base, cap = self.base // _MICROSECOND, self.cap // _MICROSECOND
        multiplier = self._exact_multiplier
        if base == 0 or multiplier == 1:
            return Fraction(base)
        # past the exponent where base * multiplier ** n reaches the cap, the power is not built
        # (a huge attempt would make a huge number): the nominal delay is the cap
        exponent = attempt - 1
        if exponent > math.log(cap / base) / math.log(multiplier) + 1:
            return Fraction(cap)
        return min(Fraction(cap), base * multiplier**exponent)

    def nominal(self, attempt: int) -> timedelta:
        """The delay before jitter after failed ``attempt``, rounded down to microseconds."""
        return timedelta(microseconds=math.floor(self._nominal_microseconds(attempt)))

    def delay(self, attempt: int, seed: str) -> timedelta:
        """The delay after failed ``attempt`` (1-based), jittered by ``seed``, whole milliseconds."""
        nominal = self._nominal_microseconds(attempt)
        jitter = self._exact_jitter
        h = jitter_hash(seed, attempt) if jitter else 0  # no jitter: the draw does not count
        # nominal * (1 - jitter * h / 2**32) microseconds, rounded down to milliseconds, in integers
        numerator = nominal.numerator * (jitter.denominator * _TWO_TO_32 - jitter.numerator * h)
        denominator = nominal.denominator * jitter.denominator * _TWO_TO_32 * 1000
        return timedelta(milliseconds=numerator // denominator)

    def schedule(self, max_attempts: int, seed: str) -> tuple[ScheduledDelay, ...]:
        """The delays after attempts 1 .. max_attempts - 1 (the last attempt is not followed by a retry)."""
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise ValueError(f"max_attempts must be an integer >= 1, got {max_attempts!r}")
        rows: list[ScheduledDelay] = []
        cumulative = timedelta(0)
        for attempt in range(1, max_attempts):
            delay = self.delay(attempt, seed)
            cumulative += delay
            rows.append(
                ScheduledDelay(
                    attempt=attempt, nominal=self.nominal(attempt), delay=delay, cumulative=cumulative
                )
            )
        return tuple(rows)
