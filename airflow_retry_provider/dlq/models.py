"""Dead letters, replays and replay jobs as frozen values.

Near the bottom of ``dlq/``: the other modules of the package import these; this imports only the
states (``dlq/states.py``) and the pure decisions (``dlq/decide.py``) below it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from airflow_retry_provider.database import from_row
from airflow_retry_provider.dlq.decide import claim_refusal
from airflow_retry_provider.policy import redact
from airflow_retry_provider.policy.text import storable
from airflow_retry_provider.states import ItemOutcome

if TYPE_CHECKING:  # a preview's instances: the failure callback never loads the REST client
    from airflow_retry_provider.hooks.airflow_api import TaskInstanceRef

AnyRow = TypeVar("AnyRow", bound="_Row")
SOURCES = ("callback", "sweeper", "watcher", "ui", "cli", "api", "driver")


# which DAGs the dead-letter sweeper sweeps (the cluster policy that tags them: dlq/managed.py)
MANAGED_TAG = "airflow-retry-provider"
SWEEP_VARIABLE = "airflow_retry_dlq_sweep_dags"


def parse_dag_list(raw: str | None) -> list[str]:
    """The Variable's DAG ids: a JSON list, or comma/whitespace-separated ids."""
    if not raw or not raw.strip():
        return []
    text = raw.strip()
    if text.startswith("["):
        value = json.loads(text)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"{SWEEP_VARIABLE} must be a JSON list of DAG ids")
        return [v.strip() for v in value if v.strip()]
    return [part for part in text.replace(",", " ").split() if part]


def json_of(row: Any) -> dict[str, Any]:
    """A frozen dataclass's fields by name, a ``datetime`` as its ISO text."""
    return {
        f.name: (value.isoformat() if isinstance(value, datetime) else value)
        for f in fields(row)
        for value in [getattr(row, f.name)]
    }


class AsJson:
    """``to_json`` for a frozen dataclass: :func:`json_of` it."""

    def to_json(self) -> dict[str, Any]:
        return json_of(self)


class _Row(AsJson):
    """``from_row`` and ``to_json`` for a frozen dataclass that mirrors a table row.

    The free-text columns named in ``_TEXT`` are redacted again as they are read (a replay's
    reason and detail, shown a few at a time). A letter's text is not: ``DeadLetterStore.file``
    redacts every free-text field when it is written, so exports and the JSON API return it as
    stored instead of paying a redaction per row per read; the pages redact what they show again.
    """

    _TEXT: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_row(cls: type[AnyRow], row: Mapping[str, Any]) -> AnyRow:
        read = from_row(cls, row)  # type: ignore[type-var]  # each subclass is a dataclass
        texts = {name: redact(value) for name in cls._TEXT if (value := getattr(read, name))}
        return replace(read, **texts) if texts else read  # type: ignore[type-var]


@dataclass(frozen=True)
class NewLetter:
    """What the failure callback (or the sweeper) files for one failed task instance.

    :param message: already redacted; never the payload itself.
    :param payload_ref: a URI or key where the input can be found, never the input.
    :param dag_version_id: Airflow's ``dag_version`` UUID the task instance ran (the worker and the
        REST API both know it); None for a letter filed before migration 0005.
    :param dag_version_number: that version's number (the REST API; a worker knows only the UUID,
        the sweeper looks the number up); None while unknown or when Airflow no longer has it.
    :param bundle_name: the DAG bundle; :param bundle_version: its version (None when the bundle
        is not versioned, e.g. a local folder).
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
    dag_version_id: str | None = None
    dag_version_number: int | None = None
    bundle_name: str | None = None
    bundle_version: str | None = None

    def version_label(self) -> str:
        """The version the task ran, as pages and the CLI say it: ``v3 (bundle dags@ab12cd)``,
        ``unknown`` when nothing was recorded, the UUID's start while its number is not known."""
        if self.dag_version_number is not None:
            label = f"v{self.dag_version_number}"
        elif self.dag_version_id:
            label = f"version {self.dag_version_id[:8]} (number unknown)"
        else:
            return "unknown"
        if self.bundle_version:
            label += f" (bundle {self.bundle_name or '?'}@{self.bundle_version[:12]})"
        return label

    def as_params(self) -> dict[str, Any]:
        """The filed fields by name (the parameters of the ``file_letter`` statement)."""
        return {f.name: getattr(self, f.name) for f in fields(NewLetter)}

    def redacted(self) -> NewLetter:
        """This letter with every free-text field (message, reason, payload_ref, workspace_id,
        code_version) redacted: what a store writes, so reads need not redact again."""
        changed: dict[str, Any] = {}
        for name in ("message", "reason", "payload_ref", "workspace_id", "code_version"):
            value = getattr(self, name)
            if value and (clean := redact(value)) != value:
                changed[name] = clean
        return replace(self, **changed) if changed else self

    def storable(self) -> NewLetter:
        """This letter with every text field :func:`~airflow_retry_provider.policy.text.storable`
        (NUL and lone surrogates replaced): PostgreSQL would refuse the row, and the failure be lost."""
        changed: dict[str, Any] = {
            f.name: storable(value)
            for f in fields(NewLetter)
            if isinstance(value := getattr(self, f.name), str) and storable(value) is not value
        }
        return replace(self, **changed) if changed else self


@dataclass(frozen=True, kw_only=True)
class Letter(_Row, NewLetter):
    """A row of ``retry_dead_letters``: what was filed, plus its id and its life cycle."""

    id: int
    status: str
    status_reason: str | None
    replay_count: int
    created_at: datetime
    updated_at: datetime


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
    job_id: int | None = None
    source: str = "cli"
    actor_verified: bool = True
    os_user: str | None = None
    downstream: bool = False
    lease_until: datetime | None = None
    clear_sent_at: datetime | None = None


@dataclass(frozen=True)
class Actor:
    """Who acts, and whether Airflow vouched for it.

    :param name: the signed-in user (UI, API) or what ``--actor`` says (CLI).
    :param source: ``ui``, ``cli``, ``api`` (people), or ``callback``, ``sweeper``, ``driver``.
    :param verified: False when nobody checked the name (the CLI's ``--actor``).
    :param os_user: the operating-system user who ran the CLI, recorded next to an unverified name.
    """

    name: str | None
    source: str
    verified: bool = True
    os_user: str | None = None

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"source: {self.source!r} is not one of {', '.join(SOURCES)}")

    @classmethod
    def system(cls, source: str) -> Actor:
        """A process acting on its own (callback, sweeper, driver)."""
        return cls(None, source)

    def label(self) -> str:
        """How the actor reads in a history line: ``ana (unverified, os user bob)``."""
        name = self.name or self.source
        if self.verified:
            return name
        return f"{name} (unverified" + (f", os user {self.os_user})" if self.os_user else ")")

    def as_params(self) -> dict[str, Any]:
        return {
            "actor": self.name,
            "actor_verified": self.verified,
            "os_user": self.os_user,
            "source": self.source,
        }


@dataclass(frozen=True)
class LetterEvent(_Row):
    """A row of ``retry_letter_events``: one step in a letter's history (append-only)."""

    id: int
    letter_id: int
    event: str
    at: datetime
    actor: str | None
    actor_verified: bool
    os_user: str | None
    source: str
    reason: str | None
    job_id: int | None
    replay_id: int | None
    try_number: int | None

    def line(self) -> str:
        """One line of history: time, event, who (and from where), why."""
        who = Actor(self.actor, self.source, self.actor_verified, self.os_user).label()
        refs = "".join(
            f" {name} {value}"
            for name, value in (("job", self.job_id), ("replay", self.replay_id), ("try", self.try_number))
            if value is not None
        )
        why = f": {self.reason}" if self.reason else ""
        return f"{self.at:%Y-%m-%d %H:%M:%S%z}  {self.event:<13} {who} via {self.source}{refs}{why}"


@dataclass(frozen=True)
class ReplayJob(_Row):
    """A row of ``retry_replay_jobs``: a replay of some letters that any process may drive."""

    id: int
    actor: str
    actor_verified: bool
    os_user: str | None
    source: str
    reason: str
    fix_version: str
    processing_version: str | None
    downstream: bool
    dag_ids: list[str]
    status: str
    lease_owner: str | None
    lease_until: datetime | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    cancelled_by: str | None
    canary_position: int | None = None  # the item cleared first, alone (None: no canary)
    canary_until: datetime | None = None  # the canary's outcome is awaited until then
    paced_since: datetime | None = None  # the canary succeeded: the rest follow at the rising pace
    stop_reason: str | None = None  # why a ``stopped`` job stopped (its canary, or the stop rule)
    run_on_latest_version: bool | None = None  # what the clears ask of Airflow (None: Airflow decides)

    _TEXT: ClassVar[tuple[str, ...]] = ("stop_reason",)

    @property
    def finished(self) -> bool:
        return self.status in ("done", "cancelled", "stopped")

    @property
    def in_canary(self) -> bool:
        """Its canary's outcome is awaited: a canary was chosen and the rest are not yet paced."""
        return self.canary_position is not None and self.paced_since is None


@dataclass(frozen=True)
class JobItem(_Row):
    """A row of ``retry_replay_job_items``: one letter of a job and what the driver did with it."""

    job_id: int
    position: int
    letter_id: int
    outcome: str
    replay_id: int | None
    detail: str | None
    done_at: datetime | None
    replay_outcome: str | None = None

    def result(self) -> ReplayResult:
        return ReplayResult(self.letter_id, ItemOutcome(self.outcome), self.replay_id, self.detail or "")


@dataclass(frozen=True)
class FixNotice(_Row):
    """A row of ``retry_fix_notices``: a newer version of a DAG is deployed while a root-cause group
    of its open letters failed on an older one. Nothing is replayed: a person decides.

    :param version_number: the version deployed; :param failed_on: the newest version the group's
        open letters failed on; :param letters: how many open letters failed on older versions.
    """

    id: int
    dag_id: str
    fingerprint: str
    version_number: int
    failed_on: int
    letters: int
    deployed_at: datetime | None
    noticed_at: datetime

    def line(self) -> str:
        """``failed on version 3; version 5 deployed at 2026-12-02 14:02 UTC``."""
        at = f" at {self.deployed_at:%Y-%m-%d %H:%M %Z}" if self.deployed_at else ""
        return f"failed on version {self.failed_on}; version {self.version_number} deployed{at}"


# set outside the class bodies: a ClassVar there would be listed in the dataclass's __dataclass_fields__
Letter._TEXT = ()  # redacted when written (DeadLetterStore.file and its status changes)
Replay._TEXT = ("reason", "detail")


# -- replays: what a person asks for, and what came of it -----------------------------------


def pace_seconds(count: int, rate_per_minute: int) -> float:
    """Seconds a replay of ``count`` instances takes at ``rate_per_minute`` (the first clear is at once)."""
    return max(0, count - 1) * 60.0 / rate_per_minute


@dataclass(frozen=True)
class ReplayRequest:
    """What a person must say to replay: who, why, and which fix is deployed.

    :param processing_version: ask for a new work-unit identity; recorded on the replay and in the
        clear's note. Without it the replay keeps the original identity (idempotency).
    :param downstream: also clear the instances downstream of each letter's task instance in its
        run that did not succeed (default); False replays the one task instance.
    :param source: ``ui``, ``api`` or ``cli``.
    :param actor_verified: False when nobody checked ``actor`` (the CLI's ``--actor``).
    :param os_user: the operating-system user, recorded next to an unverified actor.
    :param run_on_latest_version: Airflow's ``run_on_latest_version`` for the clear: True runs the
        cleared tasks on the DAG's latest version (and bundle version), False on their run's own,
        None lets Airflow decide (the DAG's ``rerun_with_latest_version``, then ``[core]``'s, else False).
    """

    actor: str
    reason: str
    fix_version: str
    processing_version: str | None = None
    downstream: bool = True
    source: str = "cli"
    actor_verified: bool = True
    os_user: str | None = None
    run_on_latest_version: bool | None = None

    def __post_init__(self) -> None:
        for name in ("actor", "reason", "fix_version"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"a replay needs {name}: {self.describe(name)}")
        if self.source not in ("ui", "api", "cli"):
            raise ValueError(f"source: {self.source!r} is not one of ui, api, cli")

    @staticmethod
    def describe(name: str) -> str:
        return {
            "actor": "who asks for it",
            "reason": "why it should run again",
            "fix_version": "the code or data version that fixes the cause",
        }[name]

    @property
    def who(self) -> Actor:
        return Actor(self.actor, self.source, self.actor_verified, self.os_user)

    def replay_params(self) -> dict[str, Any]:
        """The request's columns of ``retry_replays``."""
        return {
            "actor": self.actor,
            "reason": redact(self.reason),
            "fix_version": self.fix_version,
            "processing_version": self.processing_version,
            "source": self.source,
            "actor_verified": self.actor_verified,
            "os_user": self.os_user,
            "downstream": self.downstream,
        }


@dataclass(frozen=True)
class PreviewItem:
    """A letter a replay would take and the instances Airflow's clear dry-run reports for it."""

    letter: Letter
    instances: tuple[TaskInstanceRef, ...]
    error: str | None = None
    runs_on: str = ""  # the DAG version the replay will run, as the preview says it

    def to_json(self) -> dict[str, Any]:
        return {
            "letter": self.letter.to_json(),
            "instances": [ti.to_json() for ti in self.instances],
            "error": self.error,
            "runs_on": self.runs_on,
        }


@dataclass(frozen=True)
class Refusal(AsJson):
    """A selected letter that will not be replayed, and why."""

    letter_id: int
    status: str
    reason: str


@dataclass(frozen=True)
class Preview:
    """Exactly what a replay of the same selection would touch; nothing was changed to find it."""

    items: tuple[PreviewItem, ...]
    refused: tuple[Refusal, ...]
    rate_per_minute: int
    replay_cap: int
    downstream: bool = True
    run_on_latest_version: bool | None = None

    @property
    def count(self) -> int:
        return len(self.items)

    @property
    def instance_count(self) -> int:
        return sum(len(item.instances) for item in self.items)

    @property
    def seconds(self) -> float:
        return pace_seconds(self.count, self.rate_per_minute)

    def to_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "instance_count": self.instance_count,
            "seconds": self.seconds,
            "rate_per_minute": self.rate_per_minute,
            "replay_cap": self.replay_cap,
            "downstream": self.downstream,
            "run_on_latest_version": self.run_on_latest_version,
            "runs_on": sorted({item.runs_on for item in self.items}),
            "items": [item.to_json() for item in self.items],
            "refused": [r.to_json() for r in self.refused],
        }


@dataclass(frozen=True)
class ReplayResult(AsJson):
    """What happened to one letter of a job.

    ``cleared``; ``clear-failed`` (Airflow refused, the letter is back in ``dlq``); ``unknown`` (the
    clear's answer was lost: the sync decides); ``refused`` (not replayable when its turn came);
    ``included`` (cleared downstream of an earlier letter of the same job); ``cancelled``.
    """

    letter_id: int
    outcome: ItemOutcome
    replay_id: int | None = None
    detail: str = ""


@dataclass(frozen=True)
class ReplayReport:
    results: tuple[ReplayResult, ...]
    job_id: int | None = None

    def ids(self, outcome: ItemOutcome) -> list[int]:
        return [r.letter_id for r in self.results if r.outcome == outcome]

    @property
    def cleared(self) -> list[int]:
        return self.ids(ItemOutcome.CLEARED)

    def to_json(self) -> dict[str, Any]:
        counts = dict(Counter(r.outcome for r in self.results))
        return {"job_id": self.job_id, "counts": counts, "results": [r.to_json() for r in self.results]}


@dataclass(frozen=True)
class ClosedReplay:
    """A replayed task instance ended: its letter and the replay its outcome closed
    (:meth:`~airflow_retry_provider.dlq.store.DeadLetterStore.resolve_replaying` on a success,
    :meth:`~airflow_retry_provider.dlq.store.DeadLetterStore.file` on a failure at a newer try).

    :param letter_id: the letter.
    :param try_number: the try the letter was filed for (the one the replay ran again).
    :param replay_id: the replay closed (``succeeded`` or ``failed``); None (and the fields after
        it) when no replay was open (the sync closed it first).
    :param job_id: its replay job, when a job drove it.
    :param actor: who asked for the replay.
    :param fix_version: the fix it was asked for.
    """

    letter_id: int
    try_number: int
    replay_id: int | None = None
    job_id: int | None = None
    actor: str | None = None
    fix_version: str | None = None


@dataclass(frozen=True)
class Claim:
    """A claim attempt: the replay id when the letter was claimed, or the seconds to wait for the pace."""

    replay_id: int | None
    wait: float = 0.0


@dataclass(frozen=True)
class SyncReport:
    """Letters in ``replaying`` that the outcome sync resolved, filed again, released to ``dlq``, or left waiting."""

    resolved: tuple[int, ...] = ()
    refiled: tuple[int, ...] = ()
    waiting: tuple[int, ...] = ()
    errors: tuple[str, ...] = field(default_factory=tuple)
    released: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            name: list(getattr(self, name))
            for name in ("resolved", "refiled", "released", "waiting", "errors")
        }


@dataclass(frozen=True)
class SweepState:
    """Where the sweeper stands (``retry_sweep_state``), kept so any process continues it.

    :param watermark: how far Airflow's stream of ended task instances was read (Airflow's
        ``end_date``); None before the first sweep or when it was lost (then the sweep reads back
        its lookback).
    :param watermark_skip: rows at exactly ``watermark`` already read.
    :param caught_up: the last read reached the stream's end (the next starts an overlap earlier).
    :param pass_started_at: when the current full pass over the letters at rest began.
    """

    watermark: datetime | None
    watermark_skip: int
    caught_up: bool
    pass_started_at: datetime | None


Progress = Callable[[ReplayResult, int, int], None]
"""Told after each letter of a job: its result, how many are done, how many there are."""


def newest_letter(letters: Sequence[Letter]) -> Letter:
    """The canary a replay job starts with unless one is named: the newest letter (filed last; the higher id on a tie)."""
    return max(letters, key=lambda letter: (letter.created_at, letter.id))


def split_replayable(letters: Sequence[Letter], replay_cap: int) -> tuple[list[Letter], list[Refusal]]:
    """Replayable letters (``dlq`` under ``replay_cap``) and refusals for the rest."""
    ready, refused = [], []
    for letter in letters:
        why = claim_refusal(letter.status, letter.replay_count, replay_cap)
        if why is None:
            ready.append(letter)
        else:
            refused.append(Refusal(letter.id, letter.status, why))
    return ready, refused
