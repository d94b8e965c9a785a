"""Named retry profiles: an attempt ceiling, a backoff and an execution timeout.

``max_attempts`` counts the first execution: ``max_attempts=3`` means at most three
executions, i.e. Airflow ``retries=2``. Use :func:`retries_for` and :func:`max_attempts_for`
to translate; docs/CLASSIFICATION.md shows the attempt sequence of each built-in profile.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from types import MappingProxyType

from airflow_retry_provider.policy.backoff import Backoff
from airflow_retry_provider.policy.fields import show

_NAME_PATTERN = r"[a-z][a-z0-9_-]{0,63}"  # `re` compiles it on first use
MAX_ATTEMPTS_LIMIT = 100
"""The largest ``max_attempts`` a profile may have: more is a loop, not a retry policy."""
DEFAULT_INFRA_ALLOWANCE = 2
"""Failures of the infrastructure (a killed, evicted or lost try) a task instance may have in a
generation before they spend its attempts: one node drain and one more (a spot preemption during
the rerun) are ordinary on a shared cluster; a third says the task itself (its memory) is the cause."""
INFRA_ALLOWANCE_LIMIT = 10
"""The largest ``infra_allowance``: more would hide a task that is killed every time."""


class UnknownProfileError(KeyError, ValueError):
    """No profile of that name; the message lists the known names."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _check_int(name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer from {low} to {high}, got {value!r}")
    return value


def retries_for(max_attempts: int) -> int:
    """Airflow's ``retries`` (excluding the first try) for ``max_attempts`` (including it)."""
    return _check_int("max_attempts", max_attempts, 1, MAX_ATTEMPTS_LIMIT) - 1


def max_attempts_for(retries: int) -> int:
    """``max_attempts`` (including the first try) for Airflow's ``retries`` (excluding it)."""
    return _check_int("retries", retries, 0, MAX_ATTEMPTS_LIMIT - 1) + 1


@dataclass(frozen=True)
class Profile:
    """A named retry policy for one kind of task.

    :param name: lower-case identifier (letters, digits, ``_``, ``-``), e.g. ``"report"``.
    :param max_attempts: executions at most, counting the first (Airflow ``retries`` + 1).
    :param backoff: the delays between attempts.
    :param execution_timeout: a run taking longer is killed and counts as a failure.
    :param description: one sentence on when to use it.
    :param safe_to_repeat: running the work twice does no harm (it re-reads, or replaces what it
        wrote), so an unknown outcome (a timeout) is retried instead of sent to the queue.
    :param infra_allowance: tries that may end with no exception from the task's code (killed,
        evicted, lost: class ``infra``) before they spend ``max_attempts`` (default 2). Airflow's
        ``retries`` is sized to hold both: ``max_attempts - 1 + infra_allowance``.
    """

    name: str
    max_attempts: int
    backoff: Backoff
    execution_timeout: timedelta
    description: str
    safe_to_repeat: bool = False
    infra_allowance: int = DEFAULT_INFRA_ALLOWANCE

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not re.fullmatch(_NAME_PATTERN, self.name):
            raise ValueError(
                f"name must be 1-64 lower-case letters, digits, '_' or '-' starting with a letter, got {self.name!r}"
            )
        _check_int("max_attempts", self.max_attempts, 1, MAX_ATTEMPTS_LIMIT)
        if not isinstance(self.backoff, Backoff):
            raise ValueError(f"backoff must be a Backoff, got {self.backoff!r}")
        if not isinstance(self.execution_timeout, timedelta) or self.execution_timeout <= timedelta(0):
            raise ValueError(
                f"execution_timeout must be a positive timedelta, got {show(self.execution_timeout)}"
            )
        if not isinstance(self.description, str):
            raise ValueError(f"description must be a string, got {self.description!r}")
        if not isinstance(self.safe_to_repeat, bool):
            raise ValueError(f"safe_to_repeat must be True or False, got {self.safe_to_repeat!r}")
        _check_int("infra_allowance", self.infra_allowance, 0, INFRA_ALLOWANCE_LIMIT)

    @property
    def retries(self) -> int:
        """Airflow's ``retries`` for this profile: ``max_attempts - 1 + infra_allowance`` (both budgets;
        :func:`sized_retries`)."""
        return sized_retries(self.max_attempts, self.infra_allowance)


def sized_retries(max_attempts: int, infra_allowance: int) -> int:
    """Airflow's ``retries`` that holds both budgets: the code's ``max_attempts - 1`` retries and the
    infrastructure's ``infra_allowance`` reruns. Nothing runs more than ``max_attempts + infra_allowance`` times."""
    return max_attempts - 1 + infra_allowance


PRODUCT_BACKOFF = Backoff(base=timedelta(minutes=5), multiplier=2, cap=timedelta(hours=1), jitter=0.25)
"""The product's backoff, used by every built-in profile: 5 min, x2, capped at 1 h, up to 25 % jitter."""

BUILTIN_PROFILES: tuple[Profile, ...] = (
    Profile(
        name="dashboard",
        max_attempts=2,
        backoff=PRODUCT_BACKOFF,
        execution_timeout=timedelta(minutes=10),
        description="Dashboard refreshes: one retry; its queries only read, so they are safe to repeat.",
        safe_to_repeat=True,
    ),
    Profile(
        name="report",
        max_attempts=3,
        backoff=PRODUCT_BACKOFF,
        execution_timeout=timedelta(minutes=30),
        description="Scheduled reports: two retries, 5 then 10 minutes apart; re-running the queries is safe.",
        safe_to_repeat=True,
    ),
    Profile(
        name="pipeline",
        max_attempts=2,
        backoff=PRODUCT_BACKOFF,
        execution_timeout=timedelta(hours=2),
        description="Pipeline stages that write: one retry; not safe to repeat unless the task is idempotent.",
    ),
)

_REGISTRY: dict[str, Profile] = {profile.name: profile for profile in BUILTIN_PROFILES}

PROFILES: Mapping[str, Profile] = MappingProxyType(_REGISTRY)
"""Every known profile by name (read-only view; add with :func:`register_profile`)."""


def register_profile(profile: Profile, *, replace: bool = False) -> Profile:
    """Make ``profile`` known by its name; a name already known is refused unless ``replace``."""
    if not isinstance(profile, Profile):
        raise ValueError(f"profile must be a Profile, got {profile!r}")
    if profile.name in _REGISTRY and not replace:
        raise ValueError(f"a profile named {profile.name!r} already exists; pass replace=True to replace it")
    _REGISTRY[profile.name] = profile
    return profile


def get_profile(name: str) -> Profile:
    """The profile called ``name``; UnknownProfileError (a KeyError and ValueError) lists the known names."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        known = ", ".join(sorted(_REGISTRY))
        raise UnknownProfileError(f"unknown retry profile {name!r}; known profiles: {known}") from None
