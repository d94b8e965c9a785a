"""Dead letters and replays as frozen values, and the pure rules of their life cycle."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, cast

STATUSES = ("dlq", "replaying", "resolved", "parked", "dismissed")
DEFAULT_REPLAY_CAP = 3
REPLAY_CAP_ENV = "AIRFLOW_RETRY_DLQ_REPLAY_MAX_ATTEMPTS"


class _Row:
    """``from_row`` and ``to_json`` for a frozen dataclass that mirrors a table row."""

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Any:
        return cls(**{f.name: row[f.name] for f in fields(cls)})  # type: ignore[arg-type]

    def to_json(self) -> dict[str, Any]:
        return {
            f.name: (value.isoformat() if isinstance(value, datetime) else value)
            for f in fields(self)  # type: ignore[arg-type]
            for value in [getattr(self, f.name)]
        }


@dataclass(frozen=True)
class NewLetter:
    """What the failure callback (or the sweeper) files for one failed task instance.

    :param message: already redacted; never the payload itself.
    :param payload_ref: a URI or key where the input can be found, never the input.
    """

    dag_id: str
    run_id: str
    task_id: str
    map_index: int
    try_number: int
    attempts_used: int
    max_attempts: int | None
    work_unit_key: str
    data_interval_start: datetime | None
    data_interval_end: datetime | None
    workspace_id: str | None
    failure_class: str
    category: str
    rule: str
    exception_type: str
    message: str
    reason: str
    fingerprint: str
    code_version: str | None = None
    payload_ref: str | None = None
    filed_by: str = "callback"

    def as_params(self) -> dict[str, Any]:
        """The filed fields by name (the parameters of the ``file_letter`` statement)."""
        return {f.name: getattr(self, f.name) for f in fields(NewLetter)}


@dataclass(frozen=True, kw_only=True)
class Letter(_Row, NewLetter):
    """A row of ``retry_dead_letters``: what was filed, plus its id and its life cycle."""

    id: int
    status: str
    status_reason: str | None
    replay_count: int
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Letter:
        return cast(Letter, super().from_row(row))


@dataclass(frozen=True)
class Replay(_Row):
    """A row of ``retry_replays``: one replay a person asked for."""

    id: int
    letter_id: int
    actor: str
    reason: str
    fix_version: str
    processing_version: str | None
    try_number_before: int
    requested_at: datetime
    cleared_at: datetime | None
    outcome: str
    outcome_at: datetime | None
    detail: str | None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Replay:
        return cast(Replay, super().from_row(row))


def status_after_failure(status: str, replay_count: int, replay_cap: int) -> tuple[str, int]:
    """The letter's (status, replay_count) when its task instance fails again.

    A failed replay goes back to ``dlq`` with one more replay counted, or to ``parked`` at the
    cap; a resolved letter that fails again (a manual clear) reopens; ``dlq``, ``parked`` and
    ``dismissed`` keep their status.
    """
    if status == "replaying":
        count = replay_count + 1
        return ("parked" if count >= replay_cap else "dlq"), count
    if status == "resolved":
        return "dlq", replay_count
    return status, replay_count


def replay_cap_from_env(environ: Mapping[str, str]) -> int:
    """``AIRFLOW_RETRY_DLQ_REPLAY_MAX_ATTEMPTS`` (default 3); a bad value is a clear error."""
    raw = environ.get(REPLAY_CAP_ENV)
    if raw is None or raw == "":
        return DEFAULT_REPLAY_CAP
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{REPLAY_CAP_ENV} must be an integer >= 1, got {raw!r}")
    return int(raw)
