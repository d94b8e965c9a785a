"""Where each delivery stands today: on track, at risk or lost (issue 48, the Deliveries view).

Pure: from the letters that block a delivery (read from the stored impacts by
:mod:`airflow_retry_provider.dlq.deliveries`), :func:`classify_delivery` answers, as of ``now``:

- **lost**: a blocking letter is still at rest (``dlq``, ``parked``) and its latest replay time has
  passed; or it was dismissed (no replay will deliver); or its replay started after its latest
  replay time (the path, as estimated, no longer fits before the deadline);
- **at risk**: a blocking letter is still at rest and its latest replay time has not passed;
- **on track**: every blocking letter's replay started by its latest replay time (``replaying``
  or ``resolved``). A letter resolved without a replay of the provider's (a clear in Airflow, a
  newer run) counts from the moment the sweeper saw it resolved: later than its real start, so
  never optimistic.

Each letter has its own latest replay time for the delivery (its own path to the delivering task);
the delivery's is the earliest of its open letters' (of all of them once none is open).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from airflow_retry_provider.policy.fields import FieldError, show
from airflow_retry_provider.states import LETTER_AT_REST, LETTER_STARTED, DeliveryStatus, LetterStatus


@dataclass(frozen=True)
class Blocker:
    """One letter on a delivery's path.

    :param letter_id: the letter.
    :param status: its status, a :class:`~airflow_retry_provider.states.LetterStatus`.
    :param latest_replay: the latest moment its replay can start for this delivery (aware).
    :param started_at: when its work resumed: the clear of its newest replay, else (resolved
        without one) when it was seen resolved; None while nothing started.
    """

    letter_id: int
    status: str
    latest_replay: datetime
    started_at: datetime | None = None

    def __post_init__(self) -> None:
        if self.status not in LetterStatus.values():
            raise FieldError(
                f"must be one of {sorted(LetterStatus.values())}, got {show(self.status)}",
                path=f"blockers[{self.letter_id}].status",
            )
        for name in ("latest_replay", "started_at"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, datetime) or value.utcoffset() is None):
                raise FieldError(
                    f"must be a timezone-aware datetime, got {show(value)}",
                    path=f"blockers[{self.letter_id}].{name}",
                )

    @property
    def at_rest(self) -> bool:
        return self.status in LETTER_AT_REST


@dataclass(frozen=True)
class Standing:
    """A delivery's classification: its status, its latest replay time, and why in words."""

    status: str
    latest_replay: datetime
    reason: str
    settled: bool
    """Every blocking letter is resolved (the replays made it or not: ``status`` says)."""


def classify_delivery(blockers: Sequence[Blocker], now: datetime) -> Standing:
    """Where a delivery blocked by ``blockers`` (at least one) stands at ``now``."""
    if not blockers:
        raise FieldError("must name at least one letter", path="blockers")
    if now.utcoffset() is None:
        raise FieldError(f"must be a timezone-aware datetime, got {show(now)}", path="now")
    opened = [blocker for blocker in blockers if blocker.at_rest]
    latest = min(blocker.latest_replay for blocker in (opened or blockers))
    settled = all(blocker.status == LetterStatus.RESOLVED for blocker in blockers)
    for blocker in sorted(blockers, key=lambda b: b.letter_id):
        if blocker.status == LetterStatus.DISMISSED:
            return Standing(
                DeliveryStatus.LOST, latest, f"letter {blocker.letter_id} was dismissed: no replay", settled
            )
        if blocker.at_rest and blocker.latest_replay < now:
            return Standing(
                DeliveryStatus.LOST,
                latest,
                f"letter {blocker.letter_id} is not replayed and its latest replay time passed",
                settled,
            )
        started = blocker.started_at
        if blocker.status in LETTER_STARTED and started is not None and started > blocker.latest_replay:
            return Standing(
                DeliveryStatus.LOST,
                latest,
                f"letter {blocker.letter_id} was replayed after its latest replay time",
                settled,
            )
    if opened:
        ids = ", ".join(str(blocker.letter_id) for blocker in sorted(opened, key=lambda b: b.letter_id))
        return Standing(DeliveryStatus.AT_RISK, latest, f"letter(s) {ids} wait for a replay", settled)
    return Standing(DeliveryStatus.ON_TRACK, latest, "every blocking letter was replayed in time", settled)


def is_today(deadline: datetime, now: datetime) -> bool:
    """Whether ``deadline`` falls on today's date in its own time zone (a 09:00 São Paulo delivery is
    today's for São Paulo, whatever the server's zone)."""
    zone = deadline.tzinfo
    return deadline.date() == now.astimezone(zone).date()
