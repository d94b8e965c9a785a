"""The replay engine: select, preview, claim and clear, park, dismiss, purge, and sync outcomes.

Replays are only ever started by a person (UI, JSON API, CLI): each becomes a job in
``retry_replay_jobs`` that any process drives (``dlq/driver.py``). For each letter the driver

1. waits for the deployment's pace: at most ``rate_per_minute`` clears in any 60 seconds across
   every job and process, counted in PostgreSQL under an advisory lock (it sleeps before claiming,
   never with a letter claimed);
2. claims the letter (``dlq`` -> ``replaying``, of concurrent claims exactly one wins) with a
   lease, in the same transaction that takes the pace slot;
3. clears its task instance through Airflow's REST API, by default with the instances downstream
   of it in that run that did not succeed, so a working fix finishes the run; letters of those
   downstream instances join the replay;
4. records what Airflow said: ``cleared``; ``clear-failed`` (Airflow refused: the letter goes back
   to ``dlq``); ``unknown`` (the answer was lost: the letter stays ``replaying``).

The task's own callbacks then resolve the letter (success) or file it again (failure: back to
``dlq`` with ``replay_count + 1``, ``parked`` at the cap). ``sync_outcomes`` decides the rest from
Airflow's state and try number: success resolves, a newer failed try files it again, and a claim
whose clear never happened (lease expired, or answer lost while Airflow shows no new try) goes
back to ``dlq`` (``abandoned``). Every change is an event in the letter's history.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Any

from airflow_retry_provider import metrics, settings
from airflow_retry_provider.alerts import after_filing, send_alert
from airflow_retry_provider.alerts.messages import letter_parked
from airflow_retry_provider.dlq.models import Actor, Letter, NewLetter
from airflow_retry_provider.dlq.sql import query
from airflow_retry_provider.dlq.store import DeadLetterStore, LetterFilter
from airflow_retry_provider.hooks.airflow_api import AirflowApi, AirflowApiError, TaskInstanceRef
from airflow_retry_provider.policy import redact

log = logging.getLogger(__name__)

DEFAULT_SELECTION_LIMIT = 1000
SYNC_GRACE = timedelta(minutes=2)
NOT_CLEARED_STATES = ("failed", "upstream_failed")

Progress = Callable[["ReplayResult", int, int], None]


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
    """

    actor: str
    reason: str
    fix_version: str
    processing_version: str | None = None
    downstream: bool = True
    source: str = "cli"
    actor_verified: bool = True
    os_user: str | None = None

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
    downstream: bool = True

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
            "items": [item.to_json() for item in self.items],
            "refused": [r.to_json() for r in self.refused],
        }


@dataclass(frozen=True)
class ReplayResult:
    """What happened to one letter of a job.

    ``cleared``; ``clear-failed`` (Airflow refused, the letter is back in ``dlq``); ``unknown`` (the
    clear's answer was lost: the sync decides); ``refused`` (not replayable when its turn came);
    ``included`` (cleared downstream of an earlier letter of the same job); ``cancelled``.
    """

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
    job_id: int | None = None

    def ids(self, outcome: str) -> list[int]:
        return [r.letter_id for r in self.results if r.outcome == outcome]

    @property
    def cleared(self) -> list[int]:
        return self.ids("cleared")

    def to_json(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for result in self.results:
            counts[result.outcome] = counts.get(result.outcome, 0) + 1
        return {"job_id": self.job_id, "counts": counts, "results": [r.to_json() for r in self.results]}


@dataclass(frozen=True)
class Claim:
    """A claim attempt: the replay id when the letter was claimed, or the seconds to wait for the pace."""

    replay_id: int | None
    wait: float = 0.0


@dataclass(frozen=True)
class SyncReport:
    """Letters in ``replaying`` that ``sync_outcomes`` resolved, filed again, released to ``dlq``, or left waiting."""

    resolved: tuple[int, ...] = ()
    refiled: tuple[int, ...] = ()
    waiting: tuple[int, ...] = ()
    errors: tuple[str, ...] = field(default_factory=tuple)
    released: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "resolved": list(self.resolved),
            "refiled": list(self.refiled),
            "released": list(self.released),
            "waiting": list(self.waiting),
            "errors": list(self.errors),
        }


def replay_note(replay_id: int, request: ReplayRequest) -> str:
    """The note Airflow shows on the cleared task instance."""
    by = request.who.label()
    note = f"airflow-retry replay #{replay_id} by {by}: {request.reason} (fix {request.fix_version}"
    if request.processing_version:
        note += f", processing version {request.processing_version}"
    return redact(note + ")", 1000)


class ReplayEngine:
    """Replays dead letters through Airflow at the deployment's pace.

    :param store: the dead-letter store.
    :param api: Airflow's REST API (not needed to select, park, dismiss, submit).
    :param replay_cap: replays allowed per letter (default ``[retry_provider] replay_max_attempts``).
    :param rate_per_minute: clears per minute for the whole deployment (default
        ``[retry_provider] replay_rate_per_minute``).
    :param lease_seconds: how long a claim is held before its letter may be taken back
        (default ``[retry_provider] replay_lease_seconds``).
    :param sleep: waits for the pace (the driver's naps); tests pass a recorder that sleeps.
    """

    def __init__(
        self,
        store: DeadLetterStore,
        api: AirflowApi | None = None,
        *,
        replay_cap: int | None = None,
        rate_per_minute: int | None = None,
        lease_seconds: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.store = store
        self.api = api
        self.replay_cap = replay_cap if replay_cap is not None else settings.get("replay_max_attempts")
        self.rate_per_minute = (
            rate_per_minute if rate_per_minute is not None else settings.get("replay_rate_per_minute")
        )
        self.lease_seconds = (
            lease_seconds if lease_seconds is not None else settings.get("replay_lease_seconds")
        )
        if self.replay_cap < 1:
            raise ValueError(f"replay_cap must be >= 1, got {self.replay_cap}")
        if self.rate_per_minute < 1:
            raise ValueError(f"rate_per_minute must be >= 1, got {self.rate_per_minute}")
        if self.lease_seconds < 1:
            raise ValueError(f"lease_seconds must be >= 1, got {self.lease_seconds}")
        self.sleep = sleep

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

    def split(self, letters: Sequence[Letter]) -> tuple[list[Letter], list[Refusal]]:
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
        downstream: bool = True,
    ) -> Preview:
        """What a replay would touch, with Airflow's clear dry-run (same flags) for each letter. Changes nothing."""
        ready, refused = self.split(self.select(ids, where, limit))
        api = self._require_api() if ready else None
        items = []
        for letter in ready:
            assert api is not None
            try:
                instances = api.clear_task_instance(
                    letter.dag_id,
                    letter.run_id,
                    letter.task_id,
                    letter.map_index,
                    dry_run=True,
                    downstream=downstream,
                )
                items.append(PreviewItem(letter, tuple(instances)))
            except AirflowApiError as exc:
                items.append(PreviewItem(letter, (), error=redact(str(exc))))
        return Preview(tuple(items), tuple(refused), self.rate_per_minute, self.replay_cap, downstream)

    # -- replay ---------------------------------------------------------------------------------

    def replay(
        self,
        request: ReplayRequest,
        ids: Sequence[int] | None = None,
        where: LetterFilter | None = None,
        limit: int = DEFAULT_SELECTION_LIMIT,
        progress: Progress | None = None,
    ) -> ReplayReport:
        """Submit a job for the selection and drive it here until it is done (or another process does).

        Letters that cannot be replayed are reported ``refused``; with none replayable no job is made.
        """
        from airflow_retry_provider.dlq.driver import ReplayDriver
        from airflow_retry_provider.dlq.jobs import JobStore

        ready, refused = self.split(self.select(ids, where, limit))
        refusals = tuple(ReplayResult(r.letter_id, "refused", detail=r.reason) for r in refused)
        if not ready:
            return ReplayReport(refusals)
        api = self._require_api()
        jobs = JobStore(self.store)
        job_id = jobs.create(request, ready)
        ReplayDriver(self, lambda: api, close_api=False).run_job(job_id, progress)
        return ReplayReport(tuple(jobs.results(job_id)) + refusals, job_id)

    def claim(self, letter: Letter, request: ReplayRequest) -> int | None:
        """``dlq`` -> ``replaying`` with a lease and the replay row, outside any job and pace; the replay id or None."""
        return self.claim_paced(letter, request, paced=False).replay_id

    def claim_paced(
        self,
        letter: Letter,
        request: ReplayRequest,
        *,
        job_id: int | None = None,
        position: int | None = None,
        paced: bool = True,
    ) -> Claim:
        """Take a pace slot and claim ``letter`` in one transaction, or say how long to wait for a slot.

        The deployment's pace, counted over every job and process under an advisory lock: at most
        ``rate_per_minute`` clears in any 60 seconds, spaced at least ``60 / rate_per_minute``
        seconds apart (no burst on a dependency that just recovered). The slot is the claim's
        ``clear_sent_at``: the clear goes to Airflow right after this commits.
        """
        with self.store.transaction() as cur:
            if paced:
                cur.execute(query("pace_lock"))
                cur.execute(query("clears_in_window"))
                clears, window_wait, since_last = cur.fetchone()
                wait = 60.0 / self.rate_per_minute - since_last.total_seconds()
                if clears >= self.rate_per_minute:
                    wait = max(wait, window_wait.total_seconds())
                if wait > 0:
                    return Claim(None, wait=max(0.05, wait))
            cur.execute(
                query("claim_for_replay"),
                {
                    "id": letter.id,
                    "replay_cap": self.replay_cap,
                    "status_reason": redact(
                        f"replay requested by {request.who.label()}: {request.reason}", 500
                    ),
                },
            )
            row = cur.fetchone()
            if row is None:
                return Claim(None)
            replay_id = self._insert_replay(cur, letter.id, int(row[1]), request, job_id, send=True)
            if job_id is not None and position is not None:
                cur.execute(
                    query("set_job_item_replay"),
                    {"job_id": job_id, "position": position, "replay_id": replay_id},
                )
            self.store.record(
                cur,
                letter.id,
                "claimed",
                request.who,
                request.reason,
                job_id=job_id,
                replay_id=replay_id,
                try_number=int(row[1]),
            )
            return Claim(replay_id)

    def _insert_replay(
        self,
        cur: Any,
        letter_id: int,
        try_number: int,
        request: ReplayRequest,
        job_id: int | None,
        send: bool,
    ) -> int:
        cur.execute(
            query("insert_replay"),
            {
                **request.replay_params(),
                "letter_id": letter_id,
                "try_number_before": try_number,
                "job_id": job_id,
                "lease_seconds": self.lease_seconds,
                "send": send,
            },
        )
        return int(cur.fetchone()[0])

    def clear(
        self,
        api: AirflowApi,
        letter: Letter,
        replay_id: int,
        request: ReplayRequest,
        job_id: int | None = None,
    ) -> ReplayResult:
        """Clear the claimed letter's task instance (and its downstream); record what Airflow answered."""
        note = replay_note(replay_id, request)
        refs = {"job_id": job_id, "replay_id": replay_id, "try_number": letter.try_number}
        driver = Actor.system("driver")
        try:
            cleared = api.clear_task_instance(
                letter.dag_id,
                letter.run_id,
                letter.task_id,
                letter.map_index,
                dry_run=False,
                note=note,
                downstream=request.downstream,
            )
            if not cleared:
                raise AirflowApiError(
                    "Airflow cleared no task instance (is it no longer failed, or the DAG run gone?)", 404
                )
        except AirflowApiError as exc:
            detail = redact(f"clear failed: {exc}", 1000)
            if exc.outcome_unknown:
                with self.store.transaction() as cur:
                    cur.execute(query("mark_replay_unknown"), {"id": replay_id, "detail": detail})
                    self.store.record(cur, letter.id, "unknown", driver, detail, **refs)
                metrics.incr("replay", "unknown")
                return ReplayResult(letter.id, "unknown", replay_id, detail)
            with self.store.transaction() as cur:
                cur.execute(query("release_failed_claim"), {"id": letter.id, "status_reason": detail[:500]})
                cur.execute(
                    query("finish_pending_replays"),
                    {"letter_id": letter.id, "outcome": "clear-failed", "detail": detail},
                )
                self.store.record(cur, letter.id, "clear-failed", driver, detail, **refs)
            metrics.incr("replay", "clear_failed")
            return ReplayResult(letter.id, "clear-failed", replay_id, detail)
        with self.store.transaction() as cur:
            cur.execute(query("mark_replay_cleared"), {"id": replay_id, "detail": note})
            touched = ", ".join(_ti_label(ti) for ti in cleared)
            self.store.record(cur, letter.id, "cleared", driver, f"cleared {touched}", **refs)
            for ti in cleared:
                if (ti.task_id, ti.map_index) != (letter.task_id, letter.map_index):
                    self._join_downstream(cur, ti, letter, request, job_id)
        metrics.incr("replay", "cleared")
        return ReplayResult(letter.id, "cleared", replay_id, note)

    def _join_downstream(
        self, cur: Any, ti: TaskInstanceRef, upstream: Letter, request: ReplayRequest, job_id: int | None
    ) -> None:
        """A downstream task instance this clear reruns: its letter (if in ``dlq``) joins the replay."""
        why = f"cleared downstream of letter {upstream.id} ({upstream.task_id})"
        cur.execute(
            query("claim_letter_by_ti"),
            {
                "dag_id": ti.dag_id,
                "run_id": ti.run_id,
                "task_id": ti.task_id,
                "map_index": ti.map_index,
                "status_reason": redact(f"{why}, replay by {request.who.label()}")[:500],
            },
        )
        row = cur.fetchone()
        if row is None:
            return
        letter_id, try_number = int(row[0]), int(row[1])
        replay_id = self._insert_replay(cur, letter_id, try_number, request, job_id, send=False)
        refs = {"job_id": job_id, "replay_id": replay_id, "try_number": try_number}
        self.store.record(cur, letter_id, "claimed", request.who, why, **refs)
        self.store.record(cur, letter_id, "cleared", Actor.system("driver"), why, **refs)

    # -- park, dismiss, purge ----------------------------------------------------------------

    def park(self, letter_ids: Sequence[int], actor: str | Actor, reason: str = "") -> list[int]:
        """``dlq`` (or ``replaying`` not mid-clear) -> ``parked``: kept for inspection, replays refused."""
        who = _actor(actor, "parking needs actor: who parks it")
        why = f"parked by {who.label()}" + (f": {reason}" if reason.strip() else "")
        return self._set_status(letter_ids, "parked", why, ("dlq", "replaying"), who, reason)

    def dismiss(self, letter_ids: Sequence[int], actor: str | Actor, reason: str) -> list[int]:
        """``dlq``, ``parked`` (or ``replaying`` not mid-clear) -> ``dismissed``: closed without replay."""
        who = _actor(actor, "dismissing needs actor: who closes it")
        if not reason.strip():
            raise ValueError("dismissing needs reason: why it is closed without a replay")
        why = f"dismissed by {who.label()}: {reason}"
        return self._set_status(letter_ids, "dismissed", why, ("dlq", "parked", "replaying"), who, reason)

    def _set_status(
        self,
        letter_ids: Sequence[int],
        status: str,
        why: str,
        from_statuses: Sequence[str],
        who: Actor,
        reason: str,
    ) -> list[int]:
        changed = []
        for letter_id in letter_ids:
            with self.store.transaction() as cur:
                cur.execute(
                    query("set_status"),
                    {
                        "id": letter_id,
                        "status": status,
                        "status_reason": redact(why, 500),
                        "from_statuses": list(from_statuses),
                    },
                )
                row = cur.fetchone()
                if row is not None:
                    self.store.record(cur, letter_id, status, who, reason or None, try_number=int(row[1]))
                    changed.append(letter_id)
        return changed

    def purge_closed_before(self, before: datetime, actor: Actor | None = None) -> list[int]:
        """Delete resolved and dismissed letters (and their replays) last changed before ``before``; their history stays."""
        who = actor or Actor.system("cli")
        with self.store.transaction() as cur:
            cur.execute(
                query("delete_closed_before"),
                {
                    "before": before,
                    **who.as_params(),
                    "reason": f"retention: closed before {before.isoformat()}",
                },
            )
            return sorted(int(row[0]) for row in cur.fetchall())

    # -- outcome sync ----------------------------------------------------------------------

    def sync_outcomes(
        self,
        limit: int = 500,
        grace: timedelta = SYNC_GRACE,
        now: datetime | None = None,
        source: str = "sweeper",
        open_claims_only: bool = False,
        api: AirflowApi | None = None,
    ) -> SyncReport:
        """Decide letters in ``replaying`` from Airflow's state and try number.

        Success resolves; a newer failed try (ended at least ``grace`` ago, else its own callback
        files it) files the letter again; a claim not confirmed cleared whose lease expired, or
        whose clear's answer was lost, while Airflow still shows the failed try it was claimed at,
        goes back to ``dlq`` (``abandoned``: the clear never happened). ``open_claims_only`` looks
        only at those claims (the driver's frequent pass); the sweeper looks at every letter.
        """
        api = api or self._require_api()
        now = now or datetime.now(timezone.utc)
        resolved, refiled, released, waiting, errors = [], [], [], [], []
        with self.store.transaction() as cur:
            cur.execute(query("open_claims" if open_claims_only else "replaying_letters"), {"limit": limit})
            rows = self.store.rows(cur)
        for row in rows:
            letter = Letter.from_row(row)
            try:
                ti = api.task_instance(letter.dag_id, letter.run_id, letter.task_id, letter.map_index)
            except AirflowApiError as exc:
                if exc.status_code == 404:  # the task instance or its run was deleted: parked once
                    self._park_vanished(letter)
                    continue
                metrics.incr("sweeper", "error")
                errors.append(f"letter {letter.id}: {redact(str(exc))}")
                continue
            if ti.state == "success":
                if self.store.resolve_replaying(
                    letter.dag_id, letter.run_id, letter.task_id, letter.map_index, source=source
                ):
                    resolved.append(letter.id)
                continue
            recent = ti.end_date is not None and now - ti.end_date < grace
            if ti.state == "failed" and ti.try_number > letter.try_number and not recent:
                again = refiled_letter(letter, ti)
                result = self.store.file(again, self.replay_cap)
                if result.changed:
                    refiled.append(letter.id)
                    after_filing(self.store, again, result)
                continue
            claim_open = row.get("replay_id") is not None and row.get("cleared_at") is None
            undecided = row.get("replay_outcome") == "unknown" or bool(row.get("lease_expired"))
            if claim_open and undecided:
                if ti.state in NOT_CLEARED_STATES and ti.try_number == row["try_number_before"]:
                    if self._abandon(letter, row, source):
                        released.append(letter.id)
                    continue
                if row["replay_outcome"] == "pending":  # lease expired, but Airflow shows the clear happened
                    with self.store.transaction() as cur:
                        detail = f"lease expired; Airflow shows the clear happened (state {ti.state}, try {ti.try_number})"
                        cur.execute(query("mark_replay_unknown"), {"id": row["replay_id"], "detail": detail})
            waiting.append(letter.id)
        return SyncReport(tuple(resolved), tuple(refiled), tuple(waiting), tuple(errors), tuple(released))

    def _park_vanished(self, letter: Letter) -> None:
        """Park a replaying letter whose task instance Airflow no longer has, and tell someone (once)."""
        reason = "the task instance or its DAG run no longer exists in Airflow (404); parked by the sweeper"
        if self.store.park_vanished(letter.id, reason):
            log.warning("airflow-retry-provider: letter %s parked: %s", letter.id, reason)
            send_alert(
                self.store,
                lambda base: letter_parked(letter, letter.id, letter.replay_count, base, reason=reason),
            )

    def _abandon(self, letter: Letter, row: Mapping[str, Any], source: str) -> bool:
        lost = row["replay_outcome"] == "unknown"
        detail = (
            f"the clear's answer was lost and Airflow shows try {row['try_number_before']} still failed: "
            "the clear never happened; back to dlq"
            if lost
            else "the claim's lease expired before any clear: back to dlq"
        )
        with self.store.transaction() as cur:
            cur.execute(query("abandon_claim"), {"replay_id": row["replay_id"], "detail": detail})
            if cur.fetchone() is None:
                return False
            self.store.record(
                cur,
                letter.id,
                "clear-failed" if lost else "lease-expired",
                Actor.system(source),
                detail,
                replay_id=int(row["replay_id"]),
                try_number=letter.try_number,
            )
        metrics.incr("replay", "abandoned")
        return True

    def resolve_succeeded_in_dlq(self, dag_ids: Sequence[str] | None = None, limit: int = 1000) -> list[int]:
        """Resolve ``dlq`` letters whose task instance has since succeeded (cleared by hand in Airflow)."""
        api = self._require_api()
        with self.store.transaction() as cur:
            if dag_ids is None:
                cur.execute(query("dag_ids_with_dlq_letters"))
                dag_ids = [str(row[0]) for row in cur.fetchall()]
        resolved = []
        for dag_id in dag_ids:
            with self.store.transaction() as cur:
                cur.execute(query("dlq_letters_of_dag"), {"dag_id": dag_id, "limit": limit})
                letters = [Letter.from_row(row) for row in self.store.rows(cur)]
            if not letters:
                continue
            oldest = min(letter.updated_at for letter in letters)
            waiting = {(lt.run_id, lt.task_id, lt.map_index): lt for lt in letters}
            for ti in api.task_instances(dag_id, "success", ended_after=oldest):
                letter = waiting.get((ti.run_id, ti.task_id, ti.map_index))
                if letter is not None and self.store.resolve_succeeded(letter.id, ti.try_number):
                    resolved.append(letter.id)
        return sorted(resolved)


def _actor(actor: str | Actor, missing: str) -> Actor:
    """An ``Actor``; a bare name is a verified one from the CLI's old call sites."""
    who = actor if isinstance(actor, Actor) else Actor(actor, "cli")
    if not (who.name or "").strip():
        raise ValueError(missing)
    return who


def _ti_label(ti: TaskInstanceRef) -> str:
    return ti.task_id if ti.map_index == -1 else f"{ti.task_id}[{ti.map_index}]"

    def _park_vanished(self, letter: Letter) -> None:
        """Park a replaying letter whose task instance Airflow no longer has, and tell someone (once)."""
        reason = "the task instance or its DAG run no longer exists in Airflow (404); parked by the sweeper"
        if self.store.park_vanished(letter.id, reason):
            log.warning("airflow-retry-provider: letter %s parked: %s", letter.id, reason)
            send_alert(
                self.store,
                lambda base: letter_parked(letter, letter.id, letter.replay_count, base, reason=reason),
            )


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
