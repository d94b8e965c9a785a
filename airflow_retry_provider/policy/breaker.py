"""A circuit breaker per dependency, as a pure state machine: closed -> open -> half-open -> closed.

A dependency (a positions database, a partner API) is *unwell* when the failures that mean so
(connection failures, timeouts, 5xx, 429, deadlocks: :data:`UNWELL_CATEGORIES`; never poison)
cross a threshold in a rolling window. Its breaker then **opens**: tasks that would use it are
held (they wait without spending a try) until a cool-down passes. The first task admitted after
the cool-down is the one **probe** (**half-open**); its success **closes** the breaker, its failure
opens it again with the cool-down doubled, up to a cap. A probe that never reports (its worker
died) loses its claim after ``probe_seconds``, and the next task admitted probes instead: no state
lasts for ever.

Everything here is a function of its inputs, the clock included; the store
(``airflow_retry_provider.breaker``) keeps the state in PostgreSQL, one row per dependency, and
applies these transitions under the row's lock, so every worker and DAG shares one breaker.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

from airflow_retry_provider.policy.fields import FieldError, show

Status = Literal["closed", "open", "half-open"]
Forced = Literal["open", "closed"]
AdmissionKind = Literal["run", "probe", "hold"]

CLOSED: Status = "closed"
OPEN: Status = "open"
HALF_OPEN: Status = "half-open"

UNWELL_CATEGORIES = frozenset(
    {
        "connection-failed",
        "connect-timeout",
        "database-unavailable",
        "deadlock",
        "dns-failure",
        "insufficient-resources",
        "rate-limited",
        "read-timeout",
        "request-timeout",
        "serialization-failure",
        "server-error",
        "timeout",
    }
)
"""Categories (docs/CLASSIFICATION.md) that say the dependency, not the work, is unwell."""

WAKE_SLACK_SECONDS = 15
"""How long after the next probe time a held task asks again (at most a cool-down): the probe runs
first, so the others learn its outcome in one look; while a probe runs, how long a held task waits
before it looks again. Held tasks thus start at most about this long (plus the scheduler's delay)
after the breaker closes (docs/BREAKER.md, "When held tasks run again")."""


class BreakerSettingsError(FieldError):
    """A breaker setting is out of range; ``path`` names the dependency."""


@dataclass(frozen=True)
class BreakerSettings:
    """How one dependency's breaker trips and recovers (the ``breaker:`` of the dependency map).

    :param enabled: ``False`` turns the breaker off for this dependency (tasks are never held).
    :param window_seconds: the rolling window failures and calls are counted in.
    :param min_failures: at least this many unwell failures in the window open the breaker ...
    :param failure_ratio: ... and at least this share of the window's calls (0 < ratio <= 1).
    :param cooldown_seconds: how long the breaker stays open before the first probe.
    :param max_cooldown_seconds: the cool-down doubles after each failed probe, up to this.
    :param probe_seconds: how long a probe may run before another task may probe instead.
    :param max_hold_seconds: the longest a task waits on an open breaker; after it, the task is
        dead-lettered with a letter that names the outage.
    """

    enabled: bool = True
    window_seconds: int = 120
    min_failures: int = 5
    failure_ratio: float = 0.5
    cooldown_seconds: int = 60
    max_cooldown_seconds: int = 1800
    probe_seconds: int = 900
    max_hold_seconds: int = 3600

    def __post_init__(self) -> None:
        if not isinstance(self.enabled, bool):
            raise BreakerSettingsError(f"breaker.enabled must be true or false, got {self.enabled!r}")
        for name in (
            "window_seconds",
            "min_failures",
            "cooldown_seconds",
            "probe_seconds",
            "max_hold_seconds",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 7 * 86400:
                raise BreakerSettingsError(
                    f"breaker.{name} must be an integer from 1 to 604800, got {show(value)}"
                )
        ratio = self.failure_ratio
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 < ratio <= 1:
            raise BreakerSettingsError(f"breaker.failure_ratio must be a number in (0, 1], got {show(ratio)}")
        cap = self.max_cooldown_seconds
        if isinstance(cap, bool) or not isinstance(cap, int) or not self.cooldown_seconds <= cap <= 7 * 86400:
            raise BreakerSettingsError(
                f"breaker.max_cooldown_seconds must be an integer from cooldown_seconds "
                f"({self.cooldown_seconds}) to 604800, got {show(cap)}"
            )

    @classmethod
    def from_value(cls, value: Any, where: str = "") -> BreakerSettings:
        """From the map's ``breaker:`` value: a mapping of the fields above, ``true`` or ``false``.

        No value (the key left out) is off: a guarded task asks the database for admission before
        every try, so a dependency has a breaker only when its map says ``breaker: true`` or gives
        its settings (docs/BREAKER.md).
        """
        if value is True:
            return cls()
        if value is None or value is False:
            return cls(enabled=False)
        if not isinstance(value, Mapping):
            raise BreakerSettingsError(
                f"breaker must be a mapping, true or false, got {show(value)}", path=where
            )
        known = set(cls.__dataclass_fields__)
        unknown = sorted(str(key) for key in value if key not in known)
        if unknown:
            raise BreakerSettingsError(
                f"breaker has unknown keys {unknown}; known: {sorted(known)}", path=where
            )
        try:
            return cls(**{str(key): item for key, item in value.items()})
        except BreakerSettingsError as exc:
            raise BreakerSettingsError(exc.problem, path=where) from None

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(frozen=True)
class Window:
    """What the rolling window holds: unwell failures and all recorded calls (failures included)."""

    failures: int = 0
    calls: int = 0


@dataclass(frozen=True)
class Breaker:
    """One dependency's breaker.

    :param status: ``closed``, ``open`` or ``half-open``.
    :param cooldown_seconds: the current cool-down (0 while closed).
    :param opened_at: when the current outage began (the breaker first opened), else None.
    :param probe_at: while open, when the next probe may start.
    :param probe_key: while half-open, the task instance that probes (``dag/run/task/map``).
    :param probe_until: while half-open, when the probe's claim lapses.
    :param forced: ``open`` or ``closed`` when a person forced it, else None (automatic).
    :param failures_at_open: the window's failures when it opened (for the alert).
    """

    status: Status = CLOSED
    cooldown_seconds: int = 0
    opened_at: datetime | None = None
    probe_at: datetime | None = None
    probe_key: str | None = None
    probe_until: datetime | None = None
    forced: Forced | None = None
    failures_at_open: int = 0

    @property
    def effective(self) -> Status:
        """What tasks see: a forced state wins over the automatic one."""
        if self.forced == "open":
            return OPEN
        if self.forced == "closed":
            return CLOSED
        return self.status


@dataclass(frozen=True)
class Admission:
    """Whether a task may use the dependency now.

    :param kind: ``run`` (closed), ``probe`` (run as the one probe of a half-open breaker) or
        ``hold`` (do not run; ask again at ``until``, spending no try).
    :param until: for ``hold``, when to ask again.
    :param reason: one line for the task's log and the held task's note.
    """

    kind: AdmissionKind
    until: datetime | None = None
    reason: str = ""


def trips(window: Window, settings: BreakerSettings) -> bool:
    """Whether ``window`` crosses the threshold: enough failures, and a large enough share of calls."""
    return window.failures >= settings.min_failures and window.failures >= settings.failure_ratio * max(
        window.calls, window.failures
    )


def _opened(breaker: Breaker, now: datetime, cooldown: int, failures: int) -> Breaker:
    return replace(
        breaker,
        status=OPEN,
        cooldown_seconds=cooldown,
        opened_at=breaker.opened_at or now,
        probe_at=now + timedelta(seconds=cooldown),
        probe_key=None,
        probe_until=None,
        failures_at_open=failures if breaker.opened_at is None else breaker.failures_at_open,
    )


def _closed(breaker: Breaker) -> Breaker:
    """Closed: every field back to its default, but whether a person forced it."""
    return Breaker(forced=breaker.forced)


def after_failure(
    breaker: Breaker, window: Window, now: datetime, settings: BreakerSettings, *, key: str = ""
) -> Breaker:
    """The breaker after an unwell failure of task ``key`` (``window`` already counts it).

    Closed: opens when the window trips. Half-open: the probe's failure opens it again with the
    cool-down doubled (capped); another task's failure (it started before the breaker opened)
    changes nothing. Open: nothing changes.
    """
    if breaker.status == CLOSED:
        if settings.enabled and trips(window, settings):
            return _opened(breaker, now, settings.cooldown_seconds, window.failures)
        return breaker
    if breaker.status == HALF_OPEN and key and key == breaker.probe_key:
        doubled = max(breaker.cooldown_seconds, settings.cooldown_seconds) * 2
        cooldown = min(doubled, settings.max_cooldown_seconds)
        return _opened(breaker, now, cooldown, window.failures)
    return breaker


def after_success(breaker: Breaker, key: str) -> Breaker:
    """The breaker after task ``key`` succeeded: the probe's success closes it; others change nothing."""
    if breaker.status == HALF_OPEN and key and key == breaker.probe_key:
        return _closed(breaker)
    return breaker


def after_other_failure(breaker: Breaker, key: str) -> Breaker:
    """The breaker after task ``key`` failed for a reason that says nothing of the dependency.

    A probe that fails so (bad input, a bug) proves nothing either way: it gives up its claim,
    and the next task admitted probes instead.
    """
    if breaker.status == HALF_OPEN and key and key == breaker.probe_key:
        return replace(breaker, probe_key=None, probe_until=None)
    return breaker


def wake_at(breaker: Breaker, now: datetime, settings: BreakerSettings, *, leads: bool = True) -> datetime:
    """When a task held at ``now`` asks again: the breaker's next probe time, plus a bounded slack.

    - forced open: a cool-down later (no probe is coming; a person hands it back);
    - open: the task that ``leads`` (the longest held, which the store picks) at the probe time,
      to be the probe; the others a slack later (:data:`WAKE_SLACK_SECONDS`, at most a
      cool-down), when the probe has had time to end: they run if it closed the breaker, or are
      held until the next probe if it failed, so each held task wakes once per probe;
    - half-open (a probe runs): a slack later, never after the probe's claim lapses (then another
      task may probe): a probe that runs longer than the slack costs its held tasks a look per slack;
    - closed: now.

    A held task waits for its breaker's next probe, not for a cool-down of its own: after a close
    it starts within the slack, however long the cool-down has grown.
    """
    slack = timedelta(seconds=min(WAKE_SLACK_SECONDS, settings.cooldown_seconds))
    if breaker.forced == "open":
        return now + timedelta(seconds=settings.cooldown_seconds)
    if breaker.status == OPEN:
        probe_at = max(breaker.probe_at or now, now)
        return probe_at if leads else probe_at + slack
    if breaker.status == HALF_OPEN:
        return min(breaker.probe_until or now + slack, now + slack)
    return now


def admit(
    breaker: Breaker, key: str, now: datetime, settings: BreakerSettings, *, leads: bool = True
) -> tuple[Admission, Breaker]:
    """May task ``key`` run now? The answer and the breaker after it (a probe claim changes it).

    Forced open: hold for a cool-down, then ask again. Forced closed or closed: run. Open before
    ``probe_at``: hold until the probe time (:func:`wake_at`: the task that ``leads`` at it, the
    others a slack later). Open at or after ``probe_at``: this task becomes the probe (half-open).
    Half-open: the probe itself may run again (it was retried); when its claim lapsed, this task
    probes instead; otherwise hold for a slack, then ask again.
    """
    if not settings.enabled or breaker.forced == "closed":
        return Admission("run"), breaker
    if breaker.forced == "open":
        return Admission(
            "hold", wake_at(breaker, now, settings), "held: the breaker was forced open"
        ), breaker
    if breaker.status == CLOSED:
        return Admission("run"), breaker
    if breaker.status == OPEN:
        probe_at = breaker.probe_at or now
        if now < probe_at:
            reason = f"held: open since {_at(breaker.opened_at)}, next probe at {_at(probe_at)}"
            return Admission("hold", wake_at(breaker, now, settings, leads=leads), reason), breaker
        return _probe(breaker, key, now, settings)
    # half-open
    if key == breaker.probe_key or breaker.probe_until is None or now >= breaker.probe_until:
        return _probe(breaker, key, now, settings)
    until = wake_at(breaker, now, settings)
    return Admission("hold", until, f"held: a probe ({breaker.probe_key}) is running"), breaker


def holds_failed_try(breaker: Breaker, key: str) -> bool:
    """Whether task ``key``'s unwell failure can wait for the next probe instead of spending a try.

    Airflow 3.4's ``RetryDecision.reschedule`` keeps the try; the task then asks the breaker
    before it runs again. Yes while the breaker is open (forced or not), or half-open with another
    task probing; never for the probe's own failure (it reopens the breaker through the failure
    callback) nor while closed.
    """
    if breaker.forced == "closed":
        return False
    if breaker.effective == OPEN:
        return True
    return breaker.status == HALF_OPEN and breaker.probe_key is not None and breaker.probe_key != key


def _probe(breaker: Breaker, key: str, now: datetime, settings: BreakerSettings) -> tuple[Admission, Breaker]:
    probing = replace(
        breaker, status=HALF_OPEN, probe_key=key, probe_until=now + timedelta(seconds=settings.probe_seconds)
    )
    return Admission("probe", None, f"probe: the breaker is half-open since {_at(now)}"), probing


def force(breaker: Breaker, state: Forced | None, now: datetime) -> Breaker:
    """A person forces ``open`` or ``closed``, or hands it back to the automatic state (None).

    Forcing closed also ends the outage (the breaker is closed when handed back); forcing open
    starts one if none is running.
    """
    if state == "closed":
        return replace(_closed(breaker), forced="closed")
    if state == "open":
        return replace(breaker, forced="open", opened_at=breaker.opened_at or now)
    if breaker.forced == "open" and breaker.status == CLOSED:
        return _closed(replace(breaker, forced=None))
    return replace(breaker, forced=None)


def hold_expired(held_since: datetime | None, now: datetime, settings: BreakerSettings) -> bool:
    """Whether a task held since ``held_since`` has waited its longest (``max_hold_seconds``)."""
    return held_since is not None and now - held_since >= timedelta(seconds=settings.max_hold_seconds)


def outage_fingerprint(dependency: str, opened_at: datetime) -> str:
    """The root-cause fingerprint of the letters filed during one outage of ``dependency``.

    Every letter filed while the breaker is open groups under the outage, whatever each task's
    exception said: 16 hex characters, like :func:`airflow_retry_provider.policy.fingerprint`.
    """
    parts = ("dependency-outage", dependency, _at(opened_at))
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:16]


def outage_note(dependency: str, opened_at: datetime) -> str:
    """What a letter filed during an outage says first: its root cause is the dependency."""
    return f"root cause: dependency {dependency!r} is down (breaker open since {_at(opened_at)}); "


def _at(moment: datetime | None) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if moment is not None else "?"
