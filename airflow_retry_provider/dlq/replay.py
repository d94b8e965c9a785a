"""The replay engine: select, preview, replay at a paced rate, park, dismiss, and sync outcomes.

Replays are only ever started by a person (the CLI now, the UI next). Each replay claims its
letter atomically (``dlq`` -> ``replaying``; of concurrent replays of one letter exactly one
proceeds), records who asked, why and with which fix, and clears that one task instance
through Airflow's REST API. The task's own callbacks then resolve the letter (success) or file
it again (failure: back to ``dlq`` with ``replay_count + 1``, ``parked`` at the cap);
``sync_outcomes`` does the same from Airflow's state as a backup.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Any

from airflow_retry_provider import metrics
from airflow_retry_provider.dlq.airflow_api import AirflowApi, AirflowApiError, TaskInstanceRef
from airflow_retry_provider.dlq.models import Letter, NewLetter, replay_cap_from_env
from airflow_retry_provider.dlq.sql import query
from airflow_retry_provider.dlq.store import DeadLetterStore, LetterFilter
from airflow_retry_provider.policy import redact

RATE_ENV = "AIRFLOW_RETRY_DLQ_REPLAY_RATE_PER_MINUTE"
DEFAULT_RATE_PER_MINUTE = 10
DEFAULT_SELECTION_LIMIT = 1000
SYNC_GRACE = timedelta(minutes=2)

Progress = Callable[["ReplayResult", int, int], None]


def rate_from_env(environ: Mapping[str, str]) -> int:
    """``AIRFLOW_RETRY_DLQ_REPLAY_RATE_PER_MINUTE`` (default 10); a bad value is a clear error."""
    raw = environ.get(RATE_ENV)
    if raw is None or raw == "":
        return DEFAULT_RATE_PER_MINUTE
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{RATE_ENV} must be an integer >= 1, got {raw!r}")
    return int(raw)


def pace_seconds(count: int, rate_per_minute: int) -> float:
    """Seconds a replay of ``count`` instances takes at ``rate_per_minute`` (the first clear is at once)."""
    return max(0, count - 1) * 60.0 / rate_per_minute


@dataclass(frozen=True)
class ReplayRequest:
    """What a person must say to replay: who, why, and which fix is deployed.

    :param processing_version: ask for a new work-unit identity; recorded on the replay and in the
        clear's note. Without it the replay keeps the original identity (idempotency).
    """

    actor: str
    reason: str
    fix_version: str
    processing_version: str | None = None

    def __post_init__(self) -> None:
        for name in ("actor", "reason", "fix_version"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"a replay needs {name}: {self.describe(name)}")

    @staticmethod
    def describe(name: str) -> str:
        return {
            "actor": "who asks for it",
            "reason": "why it should run again",
            "fix_version": "the code or data version that fixes the cause",
        }[name]


@dataclass(frozen=True)
class PreviewItem:
    """A letter a replay would take and the instances Airflow's clear dry-run reports for it."""

    letter: Letter
    instances: tuple[TaskInstanceRef, ...]
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "letter": self.letter.to_json(),
            "instances": [ti.to_json() for ti in self.instances],
            "error": self.error,
        }


@dataclass(frozen=True)
class Refusal:
    """A selected letter that will not be replayed, and why."""

    letter_id: int
    status: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"letter_id": self.letter_id, "status": self.status, "reason": self.reason}


@dataclass(frozen=True)
class Preview:
    """Exactly what a replay of the same selection would touch; nothing was changed to find it."""

    items: tuple[PreviewItem, ...]
    refused: tuple[Refusal, ...]
    rate_per_minute: int
    replay_cap: int

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
            "items": [item.to_json() for item in self.items],
            "refused": [r.to_json() for r in self.refused],
        }


@dataclass(frozen=True)
class ReplayResult:
    """What happened to one selected letter: ``cleared``, ``clear-failed`` or ``refused``."""

    letter_id: int
    outcome: str
    replay_id: int | None = None
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "letter_id": self.letter_id,
            "outcome": self.outcome,
            "replay_id": self.replay_id,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class ReplayReport:
    results: tuple[ReplayResult, ...]

    def ids(self, outcome: str) -> list[int]:
        return [r.letter_id for r in self.results if r.outcome == outcome]

    @property
    def cleared(self) -> list[int]:
        return self.ids("cleared")

    def to_json(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for result in self.results:
            counts[result.outcome] = counts.get(result.outcome, 0) + 1
        return {"counts": counts, "results": [r.to_json() for r in self.results]}


@dataclass(frozen=True)
class SyncReport:
    """Letters in ``replaying`` that ``sync_outcomes`` resolved, filed again, or left waiting."""

    resolved: tuple[int, ...] = ()
    refiled: tuple[int, ...] = ()
    waiting: tuple[int, ...] = ()
    errors: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        return {
            "resolved": list(self.resolved),
            "refiled": list(self.refiled),
            "waiting": list(self.waiting),
            "errors": list(self.errors),
        }


def replay_note(replay_id: int, request: ReplayRequest) -> str:
    """The note Airflow shows on the cleared task instance."""
    note = (
        f"airflow-retry replay #{replay_id} by {request.actor}: {request.reason} (fix {request.fix_version}"
    )
    if request.processing_version:
        note += f", processing version {request.processing_version}"
    return redact(note + ")")[:1000]


class ReplayEngine:
    """Replays dead letters through Airflow, one paced clear at a time.

    :param store: the dead-letter store.
    :param api: Airflow's REST API (not needed to select, park, dismiss).
    :param replay_cap: replays allowed per letter (default ``AIRFLOW_RETRY_DLQ_REPLAY_MAX_ATTEMPTS`` or 3).
    :param rate_per_minute: clears per minute (default ``AIRFLOW_RETRY_DLQ_REPLAY_RATE_PER_MINUTE`` or 10).
    :param sleep: waits between clears; tests pass a recorder.
    :param clock: monotonic seconds; tests pass a fake one.
    """

    def __init__(
        self,
        store: DeadLetterStore,
        api: AirflowApi | None = None,
        *,
        replay_cap: int | None = None,
        rate_per_minute: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.api = api
        self.replay_cap = replay_cap if replay_cap is not None else replay_cap_from_env(os.environ)
        self.rate_per_minute = rate_per_minute if rate_per_minute is not None else rate_from_env(os.environ)
        if self.replay_cap < 1:
            raise ValueError(f"replay_cap must be >= 1, got {self.replay_cap}")
        if self.rate_per_minute < 1:
            raise ValueError(f"rate_per_minute must be >= 1, got {self.rate_per_minute}")
        self._sleep = sleep
        self._clock = clock

    def _require_api(self) -> AirflowApi:
        if self.api is None:
            raise ValueError("this needs Airflow's REST API (connection retry_provider_airflow_api)")
        return self.api

    # -- selection ------------------------------------------------------------------------------

    def select(
        self,
        ids: Sequence[int] | None = None,
        where: LetterFilter | None = None,
        limit: int = DEFAULT_SELECTION_LIMIT,
    ) -> list[Letter]:
        """Letters by ids and/or filter, oldest first (the order a replay works through them)."""
        where = where or LetterFilter()
        if ids:
            where = replace(where, ids=list(ids))
        letters: list[Letter] = []
        before: tuple[datetime, int] | None = None
        while len(letters) < limit:
            page = self.store.list(where, limit=min(500, limit - len(letters)), before=before)
            letters.extend(page)
            if len(page) == 0 or len(letters) >= limit:
                break
            before = (page[-1].created_at, page[-1].id)
        return sorted(letters, key=lambda letter: (letter.created_at, letter.id))

    def _split(self, letters: Sequence[Letter]) -> tuple[list[Letter], list[Refusal]]:
        """Replayable letters (``dlq`` under the cap) and refusals for the rest."""
        ready, refused = [], []
        for letter in letters:
            if letter.status != "dlq":
                refused.append(Refusal(letter.id, letter.status, f"status is {letter.status}, not dlq"))
            elif letter.replay_count >= self.replay_cap:
                refused.append(
                    Refusal(letter.id, letter.status, f"replay cap reached ({letter.replay_count})")
                )
            else:
                ready.append(letter)
        return ready, refused

    # -- preview --------------------------------------------------------------------------------

    def preview(
        self,
        ids: Sequence[int] | None = None,
        where: LetterFilter | None = None,
        limit: int = DEFAULT_SELECTION_LIMIT,
    ) -> Preview:
        """What a replay would touch, with Airflow's clear dry-run for each letter. Changes nothing."""
        ready, refused = self._split(self.select(ids, where, limit))
        api = self._require_api() if ready else None
        items = []
        for letter in ready:
            assert api is not None
            try:
                instances = api.clear_task_instance(
                    letter.dag_id, letter.run_id, letter.task_id, letter.map_index, dry_run=True
                )
                items.append(PreviewItem(letter, tuple(instances)))
            except AirflowApiError as exc:
                items.append(PreviewItem(letter, (), error=redact(str(exc))))
        return Preview(tuple(items), tuple(refused), self.rate_per_minute, self.replay_cap)

    # -- replay ---------------------------------------------------------------------------------

    def replay(
        self,
        request: ReplayRequest,
        ids: Sequence[int] | None = None,
        where: LetterFilter | None = None,
        limit: int = DEFAULT_SELECTION_LIMIT,
        progress: Progress | None = None,
    ) -> ReplayReport:
        """Claim, record and clear each selected letter, at most ``rate_per_minute`` clears a minute."""
        letters = self.select(ids, where, limit)
        api = self._require_api() if letters else None
        interval = 60.0 / self.rate_per_minute
        last_clear: float | None = None
        results: list[ReplayResult] = []
        for done, letter in enumerate(letters, start=1):
            claimed = self.claim(letter, request)
            if claimed is None:
                current = self.store.get(letter.id)
                status = current.status if current else "gone"
                count = current.replay_count if current else 0
                why = (
                    f"replay cap reached ({count})"
                    if status == "dlq"
                    else f"status is {status}, not dlq (refused)"
                )
                result = ReplayResult(letter.id, "refused", detail=why)
            else:
                if last_clear is not None:
                    wait = last_clear + interval - self._clock()
                    if wait > 0:
                        self._sleep(wait)
                last_clear = self._clock()
                assert api is not None
                result = self._clear(api, letter, claimed, request)
            results.append(result)
            if progress is not None:
                progress(result, done, len(letters))
        return ReplayReport(tuple(results))

    def claim(self, letter: Letter, request: ReplayRequest) -> int | None:
        """``dlq`` -> ``replaying`` and the replay row, in one transaction; the replay id or None."""
        with self.store.transaction() as cur:
            cur.execute(
                query("claim_for_replay"),
                {
                    "id": letter.id,
                    "replay_cap": self.replay_cap,
                    "status_reason": redact(f"replay requested by {request.actor}: {request.reason}")[:500],
                },
            )
            row = cur.fetchone()
            if row is None:
                return None
            cur.execute(
                query("insert_replay"),
                {
                    "letter_id": letter.id,
                    "actor": request.actor,
                    "reason": redact(request.reason),
                    "fix_version": request.fix_version,
                    "processing_version": request.processing_version,
                    "try_number_before": row[1],
                },
            )
            return int(cur.fetchone()[0])

    def _clear(self, api: AirflowApi, letter: Letter, replay_id: int, request: ReplayRequest) -> ReplayResult:
        note = replay_note(replay_id, request)
        try:
            cleared = api.clear_task_instance(
                letter.dag_id, letter.run_id, letter.task_id, letter.map_index, dry_run=False, note=note
            )
            if not cleared:
                raise AirflowApiError("Airflow cleared no task instance (is the DAG run still there?)")
        except AirflowApiError as exc:
            detail = redact(f"clear failed: {exc}")[:1000]
            with self.store.transaction() as cur:
                cur.execute(query("release_failed_claim"), {"id": letter.id, "status_reason": detail[:500]})
                cur.execute(
                    query("finish_pending_replays"),
                    {"letter_id": letter.id, "outcome": "clear-failed", "detail": detail},
                )
            metrics.incr("replay", "clear_failed")
            return ReplayResult(letter.id, "clear-failed", replay_id, detail)
        with self.store.transaction() as cur:
            cur.execute(query("mark_replay_cleared"), {"id": replay_id, "detail": note})
        metrics.incr("replay", "cleared")
        return ReplayResult(letter.id, "cleared", replay_id, note)

    # -- park, dismiss, purge ----------------------------------------------------------------

    def park(self, letter_ids: Sequence[int], actor: str, reason: str = "") -> list[int]:
        """``dlq`` -> ``parked`` (kept for inspection, replays refused); the ids that changed."""
        if not actor.strip():
            raise ValueError("parking needs actor: who parks it")
        why = f"parked by {actor}" + (f": {reason}" if reason.strip() else "")
        return self._set_status(letter_ids, "parked", why, ("dlq",))

    def dismiss(self, letter_ids: Sequence[int], actor: str, reason: str) -> list[int]:
        """``dlq`` or ``parked`` -> ``dismissed`` (closed without replay); the ids that changed."""
        if not actor.strip():
            raise ValueError("dismissing needs actor: who closes it")
        if not reason.strip():
            raise ValueError("dismissing needs reason: why it is closed without a replay")
        return self._set_status(letter_ids, "dismissed", f"dismissed by {actor}: {reason}", ("dlq", "parked"))

    def _set_status(
        self, letter_ids: Sequence[int], status: str, why: str, from_statuses: Sequence[str]
    ) -> list[int]:
        changed = []
        for letter_id in letter_ids:
            with self.store.transaction() as cur:
                cur.execute(
                    query("set_status"),
                    {
                        "id": letter_id,
                        "status": status,
                        "status_reason": redact(why)[:500],
                        "from_statuses": list(from_statuses),
                    },
                )
                if cur.fetchone() is not None:
                    changed.append(letter_id)
        return changed

    def purge_closed_before(self, before: datetime) -> list[int]:
        """Delete resolved and dismissed letters (and their replays) last changed before ``before``."""
        with self.store.transaction() as cur:
            cur.execute(query("delete_closed_before"), {"before": before})
            return sorted(int(row[0]) for row in cur.fetchall())

    # -- outcome sync ----------------------------------------------------------------------

    def sync_outcomes(
        self,
        limit: int = 500,
        grace: timedelta = SYNC_GRACE,
        now: datetime | None = None,
    ) -> SyncReport:
        """For letters in ``replaying``: resolve them when Airflow says success, file them again on a new failure.

        The backup for the callbacks. A failure that ended less than ``grace`` ago is left to the
        task's own callback, which knows the exception.
        """
        api = self._require_api()
        now = now or datetime.now(timezone.utc)
        resolved, refiled, waiting, errors = [], [], [], []
        with self.store.transaction() as cur:
            cur.execute(query("replaying_letters"), {"limit": limit})
            letters = [Letter.from_row(row) for row in self.store.rows(cur)]
        for letter in letters:
            try:
                ti = api.task_instance(letter.dag_id, letter.run_id, letter.task_id, letter.map_index)
            except AirflowApiError as exc:
                errors.append(f"letter {letter.id}: {redact(str(exc))}")
                continue
            if ti.state == "success":
                if self.store.resolve_replaying(
                    letter.dag_id, letter.run_id, letter.task_id, letter.map_index
                ):
                    resolved.append(letter.id)
                continue
            recent = ti.end_date is not None and now - ti.end_date < grace
            if ti.state == "failed" and ti.try_number > letter.try_number and not recent:
                result = self.store.file(refiled_letter(letter, ti), self.replay_cap)
                if result.changed:
                    refiled.append(letter.id)
                continue
            waiting.append(letter.id)
        return SyncReport(tuple(resolved), tuple(refiled), tuple(waiting), tuple(errors))


def refiled_letter(letter: Letter, ti: TaskInstanceRef) -> NewLetter:
    """The letter again, at the task instance's newer failed try, as the sweeper saw it."""
    return NewLetter(
        dag_id=letter.dag_id,
        run_id=letter.run_id,
        task_id=letter.task_id,
        map_index=letter.map_index,
        try_number=ti.try_number,
        attempts_used=letter.attempts_used,
        max_attempts=letter.max_attempts,
        work_unit_key=letter.work_unit_key,
        data_interval_start=letter.data_interval_start,
        data_interval_end=letter.data_interval_end,
        workspace_id=letter.workspace_id,
        failure_class=letter.failure_class,
        category=letter.category,
        rule=letter.rule,
        exception_type=letter.exception_type,
        message=letter.message,
        reason=f"replay failed at try {ti.try_number} (seen by the sweeper; its callback filed nothing)",
        fingerprint=letter.fingerprint,
        code_version=letter.code_version,
        payload_ref=letter.payload_ref,
        filed_by="sweeper",
    )
