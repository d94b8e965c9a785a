"""Exact, deterministic exponential backoff with a capped delay and a seeded jitter.

For ``attempt`` = the number of the attempt that just failed (1 for the first execution)::

    nominal = min(cap, base * multiplier ** (attempt - 1))
    u       = blake2b(f"{seed}#{attempt}".encode("utf-8"), digest_size=8) / 2**64   # 0 <= u < 1
    delay   = nominal * (1 - jitter * u), rounded down to whole milliseconds

The digest is read as a big-endian unsigned integer (:func:`jitter_hash`). The arithmetic is done
on integers (microseconds, and the multiplier and jitter as exact fractions of their decimal
value: 1.5 is 3/2, 0.1 is 1/10), so the result is exact and the same on every machine, in every
process and on every Python version; a huge ``attempt`` simply gives the cap. No clock, no
``random``, no ``hash()`` (salted per process).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import timedelta
from fractions import Fraction
from hashlib import blake2b

_TWO_TO_64 = 2**64
_MICROSECONDS_PER_MILLISECOND = 1000


def jitter_hash(seed: str, attempt: int) -> int:
    """The jitter's draw for ``attempt`` of the work unit ``seed``: the 8-byte BLAKE2b digest of
    ``f"{seed}#{attempt}"`` (UTF-8) as a big-endian integer, in [0, 2**64).

    BLAKE2b runs in C (``hashlib``, always built in), so a seed is hashed whole on every call.
    A lone surrogate in ``seed`` is encoded as its code point (``surrogatepass``) rather than refused.
    """
    data = f"{seed}#{attempt}".encode("utf-8", "surrogatepass")
    return int.from_bytes(blake2b(data, digest_size=8).digest(), "big")


def jitter_fraction(seed: str, attempt: int) -> Fraction:
    """``u`` of the formula: ``jitter_hash(seed, attempt) / 2**64``, in [0, 1)."""
    return Fraction(jitter_hash(seed, attempt), _TWO_TO_64)


def _microseconds(value: timedelta) -> int:
    return (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds


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
    # derived once in __post_init__: base and cap in microseconds, and the multiplier as an exact
    # fraction of its decimal value (numerator, denominator), all plain integers
    _integers: tuple[int, int, int, int] = field(init=False, repr=False, compare=False)
    # the jitter as an exact fraction of its decimal value, its denominator times 2**64 (what
    # delay() divides by on every call)
    _jitter_scaled: tuple[int, int] = field(init=False, repr=False, compare=False)
    _cap_exponent: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.base, timedelta) or self.base < timedelta(0):
            raise ValueError(f"base must be a timedelta >= 0, got {self.base!r}")
        if not isinstance(self.cap, timedelta) or self.cap < self.base:
            raise ValueError(f"cap must be a timedelta >= base ({self.base}), got {self.cap!r}")
        _check_number("multiplier", self.multiplier, 1, 1000)
        _check_number("jitter", self.jitter, 0, 1)
        multiplier, jitter = _exact(self.multiplier), _exact(self.jitter)
        base, cap = _microseconds(self.base), _microseconds(self.cap)
        object.__setattr__(
            self,
            "_integers",
            (base, cap, multiplier.numerator, multiplier.denominator),
        )
        object.__setattr__(self, "_jitter_scaled", (jitter.numerator, jitter.denominator * _TWO_TO_64))
        # an exponent past which the nominal delay is the cap by a factor e or more (no huge powers)
        growth = math.log(multiplier) if multiplier > 1 else 0.0
        limit = (math.log(cap / base) + 1) / growth if base and growth else math.inf
        object.__setattr__(self, "_cap_exponent", limit)

    def _nominal_microseconds(self, attempt: int) -> tuple[int, int]:
        """Exact ``min(cap, base * multiplier ** (attempt - 1))`` in microseconds, as (numerator, denominator)."""
        if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1:
            raise ValueError(f"attempt must be an integer >= 1, got {attempt!r}")
        base, cap, multiplier_p, multiplier_q = self._integers
        exponent = attempt - 1
        if base == 0 or exponent == 0 or multiplier_p == multiplier_q:
            return base, 1
        if exponent > self._cap_exponent:  # far past the cap: do not build huge powers
            return cap, 1
        numerator = base * multiplier_p**exponent
        denominator = multiplier_q**exponent
        if numerator >= cap * denominator:
            return cap, 1
        return numerator, denominator

    def nominal(self, attempt: int) -> timedelta:
        """The delay before jitter after failed ``attempt``, rounded down to microseconds."""
        numerator, denominator = self._nominal_microseconds(attempt)
        return timedelta(microseconds=numerator // denominator)

    def delay(self, attempt: int, seed: str) -> timedelta:
        """The delay after failed ``attempt`` (1-based), jittered by ``seed``, whole milliseconds."""
        numerator, denominator = self._nominal_microseconds(attempt)
        # nominal * (1 - jitter * h / 2**64) with jitter = jp / jq, all in integers
        jp, scaled_jq = self._jitter_scaled  # scaled_jq = jq * 2**64
        if not jp:  # no jitter: the hash does not count
            milliseconds = numerator // (denominator * _MICROSECONDS_PER_MILLISECOND)
        else:
            factor_numerator = scaled_jq - jp * jitter_hash(seed, attempt)
            milliseconds = (numerator * factor_numerator) // (
                denominator * scaled_jq * _MICROSECONDS_PER_MILLISECOND
            )
        # positional: timedelta(milliseconds=...) costs three times as much
        return timedelta(0, 0, milliseconds * _MICROSECONDS_PER_MILLISECOND)

    def schedule(self, max_attempts: int, seed: str) -> tuple[ScheduledDelay, ...]:
        """The delays after attempts 1 .. max_attempts - 1 (the last attempt is not followed by a retry)."""
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise ValueError(f"max_attempts must be an integer >= 1, got {max_attempts!r}")
        rows: list[ScheduledDelay] = []
        cumulative = timedelta(0)
        for attempt in range(1, max_attempts):
            delay = self.delay(attempt, seed)
            cumulative += delay
            rows.append(ScheduledDelay(attempt, self.nominal(attempt), delay, cumulative))
        return tuple(rows)
