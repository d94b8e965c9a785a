"""The dead-letter store: the letters' named SQL from ``sql/queries.sql`` on the provider's database, rows as models."""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.dlq.decide import status_after_failure
from airflow_retry_provider.dlq.filters import LetterFilter
from airflow_retry_provider.dlq.models import (
    Actor,
    ClosedReplay,
    FixNotice,
    Letter,
    LetterEvent,
    NewLetter,
    Replay,
    SweepState,
)
from airflow_retry_provider.dlq.sql import query
from airflow_retry_provider.dlq.store.base import QueueStore, record
from airflow_retry_provider.policy import redact
from airflow_retry_provider.policy.impact import Impact
from airflow_retry_provider.policy.text import storable
from airflow_retry_provider.states import LETTER_OPEN, LetterStatus, ReplayOutcome

if TYPE_CHECKING:
    from airflow_retry_provider.hooks.airflow_api import DagVersion


@dataclass(frozen=True)
class FailedTry:
    """One failed try of a managed task and its class (``retry_failed_tries``, issue 57).

    :param failure_class: ``poison``, ``retryable``, ``unknown`` (the task's code failed) or ``infra``.
    :param category: the class's category (``killed``, ``worker-lost``...).
    :param hostname: the worker or node the try ran on, when Airflow named it.
    """

    dag_id: str
    run_id: str
    task_id: str
    map_index: int
    try_number: int
    failure_class: str
    category: str
    hostname: str | None = None


@dataclass(frozen=True)
class FileResult:
    """What filing a letter did: ``created`` a row, ``changed`` an existing one, or neither (a repeat)."""

    letter_id: int
    status: str
    replay_count: int
    created: bool
    changed: bool
    reopened: bool = False
    """A dismissed letter failed again at a newer try and is open work again."""
    replay: ClosedReplay | None = None
    """The replay this failure closed as ``failed`` (a replayed try failed again)."""


def _closed_replay(letter_id: int, try_number: int, closed: Any) -> ClosedReplay:
    """The letter and the replay ``finish_pending_replays`` closed (its row: id, job_id, actor, fix_version; or None)."""
    if closed is None:
        return ClosedReplay(letter_id, try_number)
    replay_id, job_id, actor, fix_version = closed
    return ClosedReplay(
        letter_id,
        try_number,
        replay_id=int(replay_id),
        job_id=int(job_id) if job_id is not None else None,
        actor=str(actor),
        fix_version=str(fix_version),
    )


class FilingListener:
    """A session of its own on the provider's database that hears letters filed (``LISTEN
    retry_provider_filed``) and may hold the impact thread's session lock (one computer per deployment).

    :param conn: a dedicated psycopg 3 connection in autocommit (a pool's would keep the lock and the
        LISTEN after it went back).
    """

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.lead = False

    def try_lead(self) -> bool:
        """Take the session lock if no other session holds it; True while this one holds it."""
        if not self.lead:
            row = self.conn.execute(query("try_impact_lead")).fetchone()
            self.lead = bool(row[0])
        return self.lead

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a letter filed; True when one was (every notice waiting is read)."""
        heard = False
        for _ in self.conn.notifies(timeout=timeout, stop_after=1):
            heard = True
        if heard:  # the rest of a storm's notices, without waiting
            for _ in self.conn.notifies(timeout=0.0):
                pass
        return heard


class DeadLetterStore(QueueStore):
    """Reads and writes letters; each public method is one transaction.

    :param db: the provider's database.
    """

    record = staticmethod(record)

    @staticmethod
    def letter_in(cursor: Any, letter_id: int) -> Letter | None:
        """The letter ``letter_id``, read in the caller's transaction (an alert describing it)."""
        cursor.execute(query("get_letter"), {"id": letter_id})
        row = ProviderDatabase.one(cursor)
        return Letter.from_row(row) if row else None

    # -- writing ---------------------------------------------------------------------------

    def file(self, letter: NewLetter, replay_cap: int) -> FileResult:
        """File ``letter`` idempotently: the same task instance and try twice writes one row.

        A later try of a task instance that already has a letter updates it: after a failed
        replay it returns to ``dlq`` with ``replay_count + 1`` (``parked`` at ``replay_cap``).
        Every free-text field is redacted here, whoever built the letter (``NewLetter.redacted``: reads
        return it as stored), and text PostgreSQL refuses (NUL, lone surrogates) is replaced
        (``NewLetter.storable``): no message a task raises can make the row fail.
        """
        letter = letter.redacted().storable()
        params = letter.as_params()
        by = Actor.system(letter.filed_by)
        with self.db.transaction() as cur:
            cur.execute(query("insert_letter"), params)
            inserted = cur.fetchone()
            if inserted is not None:
                self.record(cur, int(inserted[0]), "filed", by, letter.reason, try_number=letter.try_number)
                self._await_impact(cur, int(inserted[0]))
                return FileResult(int(inserted[0]), LetterStatus.DLQ, 0, created=True, changed=True)
            cur.execute(query("lock_letter_by_ti"), params)
            letter_id, status, replay_count, try_number = cur.fetchone()
            if try_number >= letter.try_number:
                return FileResult(letter_id, status, replay_count, created=False, changed=False)
            new_status, new_count = status_after_failure(status, replay_count, replay_cap)
            why = {
                LetterStatus.REPLAYING: "replay failed",
                LetterStatus.DISMISSED: "reopened: failed again after dismissal",
            }.get(status, "failed again")
            cur.execute(
                query("refile_letter"),
                {
                    **params,
                    "id": letter_id,
                    "status": new_status,
                    "replay_count": new_count,
                    "status_reason": f"{why} (try {letter.try_number})",
                },
            )
            replay_id, replay = None, None
            if status == LetterStatus.REPLAYING:
                cur.execute(
                    query("finish_pending_replays"),
                    {"letter_id": letter_id, "outcome": ReplayOutcome.FAILED, "detail": letter.reason},
                )
                closed = cur.fetchone()
                replay_id = int(closed[0]) if closed else None
                replay = _closed_replay(letter_id, try_number, closed)
            self.record(
                cur,
                letter_id,
                "failed-again" if status == LetterStatus.REPLAYING else "refiled",
                by,
                f"{why} (try {letter.try_number}): {letter.reason}; now {new_status}",
                replay_id=replay_id,
                try_number=letter.try_number,
            )
            self._await_impact(cur, letter_id)
            return FileResult(
                letter_id,
                new_status,
                new_count,
                created=False,
                changed=True,
                reopened=status == LetterStatus.DISMISSED,
                replay=replay,
            )

    @staticmethod
    def _await_impact(cur: Any, letter_id: int) -> None:
        """The letter awaits its impact (``retry_impact_queue``), and the impact thread is woken when the
        filing commits (NOTIFY ``retry_provider_filed``): no REST call where the letter is filed (issue 58)."""
        cur.execute(query("queue_impact"), {"letter_id": letter_id})
        cur.execute(query("notify_filed"))

    # -- the tries that failed, and letters of tries no exception explained (issue 57) -------

    def record_failed_try(self, failed: FailedTry) -> bool:
        """Record one failed try with its class; False when it was recorded already (the first writer wins)."""
        return self._run("record_failed_try", asdict(failed)) == 1

    def failed_tries(
        self, dag_id: str, run_id: str, task_id: str, map_index: int
    ) -> builtins.list[FailedTry]:
        """The recorded failed tries of one task instance, oldest first."""
        key: dict[str, Any] = {"dag_id": dag_id, "run_id": run_id, "task_id": task_id, "map_index": map_index}
        return [FailedTry(**key, **row) for row in self._rows("failed_tries_of", key)]

    def letter_of(self, dag_id: str, run_id: str, task_id: str, map_index: int) -> Letter | None:
        """The letter of one task instance (any status), if it has one."""
        key = {"dag_id": dag_id, "run_id": run_id, "task_id": task_id, "map_index": map_index}
        letters = self._letters("letter_of_task_instance", key)
        return letters[0] if letters else None

    def reclassify(self, letter_id: int, letter: NewLetter, why: str) -> FileResult | None:
        """Give letter ``letter_id``, filed ``unknown`` for ``letter``'s try, the class ``letter`` carries,
        with a ``refiled`` event saying ``why``; None when the letter is of another try or class."""
        letter = letter.redacted().storable()
        with self.db.transaction() as cur:
            cur.execute(query("reclassify_letter"), {**letter.as_params(), "id": letter_id})
            row = cur.fetchone()
            if row is None:
                return None
            by = Actor.system(letter.filed_by)
            self.record(cur, letter_id, "refiled", by, why[:500], try_number=letter.try_number)
            self._await_impact(cur, letter_id)
            return FileResult(letter_id, row[0], int(row[1]), created=False, changed=True)

    def resolve_replaying(
        self, dag_id: str, run_id: str, task_id: str, map_index: int, source: str = "callback"
    ) -> ClosedReplay | None:
        """A replayed task instance succeeded: its letter becomes ``resolved``. Returns the letter and
        the replay it closed (None when no letter of that task instance was replaying)."""
        ti = {"dag_id": dag_id, "run_id": run_id, "task_id": task_id, "map_index": map_index}
        with self.db.transaction() as cur:
            cur.execute(query("resolve_replaying_letter"), {**ti, "status_reason": "replay succeeded"})
            row = cur.fetchone()
            if row is None:
                return None
            letter_id, why = int(row[0]), "the replayed task instance succeeded"
            cur.execute(
                query("finish_pending_replays"),
                {"letter_id": letter_id, "outcome": "succeeded", "detail": None},
            )
            closed = cur.fetchone()
            refs = {"replay_id": int(closed[0]) if closed else None, "try_number": int(row[1])}
            self.record(cur, letter_id, "resolved", Actor.system(source), why, **refs)
            return _closed_replay(letter_id, int(row[1]), closed)

    def park_vanished(self, letter_id: int, reason: str) -> bool:
        """Park a ``replaying`` letter whose task instance or run no longer exists, closing its pending replay.

        Recorded once: a parked letter is not looked at by the next sync. True if it was parked now.
        """
        with self.db.transaction() as cur:
            cur.execute(query("park_vanished_letter"), {"id": letter_id, "status_reason": reason})
            if cur.fetchone() is None:
                return False
            self.record(cur, letter_id, "parked", Actor.system("sweeper"), reason)
            return True

    def end_replay(
        self, letter_id: int, replay_id: int, detail: str, replay_cap: int, source: str
    ) -> str | None:
        """A cleared replay whose task instance ended without succeeding failed: ``dlq`` with one more replay
        counted (``parked`` at ``replay_cap``). The letter's new status, or None when the claim was closed already."""
        parameters = {
            "replay_id": replay_id,
            "detail": detail,
            "status_reason": detail[:500],
            "replay_cap": replay_cap,
        }
        with self.db.transaction() as cur:
            cur.execute(query("end_replay_without_success"), parameters)
            row = cur.fetchone()
            if row is None:
                return None
            status, refs = str(row[1]), {"replay_id": replay_id, "try_number": int(row[3])}
            self.record(
                cur, letter_id, "failed-again", Actor.system(source), f"{detail}; now {status}", **refs
            )
            return status

    def release_unclaimed(self, letter_id: int) -> bool:
        """A ``replaying`` letter with no open claim goes back to ``dlq`` (nothing else would decide it)."""
        why = "replaying with no open claim: back to dlq"
        with self.db.transaction() as cur:
            cur.execute(query("release_unclaimed"), {"id": letter_id, "status_reason": why})
            row = cur.fetchone()
            if row is None:
                return False
            self.record(cur, letter_id, "lease-expired", Actor.system("sweeper"), why, try_number=int(row[1]))
            return True

    def resolve_succeeded(self, letter_id: int, try_number: int) -> bool:
        """A ``dlq`` or ``parked`` letter whose task instance has since succeeded (cleared by hand) is resolved."""
        why = f"the task instance succeeded at try {try_number} outside a replay"
        with self.db.transaction() as cur:
            cur.execute(query("resolve_dlq_letter"), {"id": letter_id, "status_reason": why})
            if cur.fetchone() is None:
                return False
            self.record(cur, letter_id, "resolved", Actor.system("sweeper"), why, try_number=try_number)
            return True

    # -- where the sweeper stands (dlq/sweeper.py, issue 46) -------------------------------------

    def sweep_state(self, name: str = "dead-letters") -> SweepState:
        """The sweeper's watermark and full pass (a fresh state when none was kept, or it was lost)."""
        row = self._row("sweep_state", {"name": name})
        if row is None:
            return SweepState(None, 0, True, None)
        return SweepState(row[0], int(row[1]), bool(row[2]), row[3])

    def save_sweep_state(self, state: SweepState, name: str = "dead-letters") -> None:
        self._run("save_sweep_state", {"name": name, **asdict(state)})

    def resting_letters_not_checked_since(self, since: datetime, limit: int) -> builtins.list[Letter]:
        """Letters at rest not checked since ``since`` (the sweep's full pass), at most ``limit``."""
        return self._letters("resting_letters_not_checked_since", {"since": since, "limit": limit})

    def stamp_checked(self, letter_ids: Sequence[int]) -> None:
        """Airflow answered for these letters at rest: the full pass checked them."""
        self._run("stamp_checked", {"ids": builtins.list(letter_ids)})

    def _letters(self, name: str, parameters: dict[str, Any] | None = None) -> builtins.list[Letter]:
        """The letters the named statement returns, in one transaction."""
        return [Letter.from_row(row) for row in self._rows(name, parameters)]

    def open_letters_of(self, keys: Sequence[tuple[str, str, str, int]]) -> builtins.list[Letter]:
        """The open letters (``dlq``, ``parked``, ``replaying``) of these task instances."""
        if not keys:
            return []
        dag_ids, run_ids, task_ids, map_indexes = (builtins.list(part) for part in zip(*keys, strict=True))
        parameters = {
            "dag_ids": dag_ids,
            "run_ids": run_ids,
            "task_ids": task_ids,
            "map_indexes": map_indexes,
        }
        return self._letters("open_letters_of_task_instances", parameters)

    def open_letter_dags(self) -> builtins.list[str]:
        """The DAGs with an open letter."""
        return [str(row["dag_id"]) for row in self._rows("open_letter_dags")]

    def sweep_backlog(self, since: datetime) -> tuple[int, datetime | None]:
        """Letters at rest not checked since ``since``, and the oldest check of a letter at rest."""
        unchecked, oldest = self._row("sweep_backlog", {"since": since})
        return int(unchecked), oldest

    def database_now(self) -> datetime:
        """PostgreSQL's clock."""
        value: datetime = self._row("database_now")[0]
        return value

    def has_letter(self, dag_id: str, run_id: str, task_id: str, map_index: int, try_number: int) -> bool:
        """True if a letter already covers this task instance at ``try_number`` or later."""
        params = {
            "dag_id": dag_id,
            "run_id": run_id,
            "task_id": task_id,
            "map_index": map_index,
            "try_number": try_number,
        }
        return self._row("letter_exists_for_ti", params) is not None

    # -- the claim of a replay (dlq/replay.py claims and clears, dlq/driver.py drives) ---------

    def mark_replay_unknown(self, replay_id: int, detail: str) -> None:
        """The clear's answer was lost: the letter stays ``replaying`` and the sync decides."""
        self._run("mark_replay_unknown", {"id": replay_id, "detail": detail})

    def open_replay(self, letter_id: int) -> Replay | None:
        """The letter's open replay (the newest still pending or unknown), if any."""
        rows = self._rows("claim_of_letter", {"letter_id": letter_id})
        return Replay.from_row(rows[0]) if rows else None

    # -- park, dismiss, purge: a person's decisions ------------------------------------------

    def park(self, letter_ids: Sequence[int], actor: str | Actor, reason: str = "") -> builtins.list[int]:
        """``dlq`` (or ``replaying`` not mid-clear) -> ``parked``: kept for inspection, replays refused."""
        who = _actor(actor, "parking needs actor: who parks it")
        why = f"parked by {who.label()}" + (f": {reason}" if reason.strip() else "")
        return self._set_status(
            letter_ids, LetterStatus.PARKED, why, (LetterStatus.DLQ, LetterStatus.REPLAYING), who, reason
        )

    def dismiss(self, letter_ids: Sequence[int], actor: str | Actor, reason: str) -> builtins.list[int]:
        """``dlq``, ``parked`` (or ``replaying`` not mid-clear) -> ``dismissed``: closed without replay."""
        who = _actor(actor, "dismissing needs actor: who closes it")
        if not reason.strip():
            raise ValueError("dismissing needs reason: why it is closed without a replay")
        why = f"dismissed by {who.label()}: {reason}"
        return self._set_status(letter_ids, LetterStatus.DISMISSED, why, LETTER_OPEN, who, reason)

    def _set_status(
        self,
        letter_ids: Sequence[int],
        status: LetterStatus,
        why: str,
        from_statuses: Sequence[LetterStatus],
        who: Actor,
        reason: str,
    ) -> builtins.list[int]:
        from airflow_retry_provider.policy import redact

        changed = []
        for letter_id in letter_ids:
            with self.db.transaction() as cur:
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
                    self.record(cur, letter_id, status, who, reason or None, try_number=int(row[1]))
                    changed.append(letter_id)
        return changed

    def purge_closed_before(self, before: datetime, actor: Actor | None = None) -> builtins.list[int]:
        """Delete resolved and dismissed letters (and their replays) last changed before ``before``; their history stays."""
        who = actor or Actor.system("cli")
        reason = f"retention: closed before {before.isoformat()}"
        rows = self._rows("delete_closed_before", {"before": before, **who.as_params(), "reason": reason})
        return sorted(int(row["id"]) for row in rows)

    # -- reading ---------------------------------------------------------------------------

    def get(self, letter_id: int) -> Letter | None:
        letters = self._letters("get_letter", {"id": letter_id})
        return letters[0] if letters else None

    def list(
        self,
        where: LetterFilter | None = None,
        limit: int = 50,
        before: tuple[datetime, int] | None = None,
    ) -> list[Letter]:
        """Letters matching ``where``, newest first; ``before`` is the last row of the previous page."""
        params = (where or LetterFilter()).as_params()
        params.update(
            limit=limit,
            before_created=before[0] if before else None,
            before_id=before[1] if before else None,
        )
        return self._letters("list_letters", params)

    def events(self, letter_id: int) -> builtins.list[LetterEvent]:
        """The letter's history, oldest first (kept after the letter is purged)."""
        return [LetterEvent.from_row(row) for row in self._rows("events_of_letter", {"letter_id": letter_id})]

    def replays(self, letter_id: int) -> builtins.list[Replay]:
        return [Replay.from_row(row) for row in self._rows("replays_of_letter", {"letter_id": letter_id})]

    # -- DAG versions ------------------------------------------------------------------------

    def unnumbered_versions(self, limit: int = 500) -> builtins.list[tuple[str, str]]:
        """(dag_id, dag_version_id) of the versions letters name by UUID only, at most ``limit``."""
        rows = self._rows("unnumbered_versions", {"limit": limit})
        return [(str(row["dag_id"]), str(row["dag_version_id"])) for row in rows]

    def number_version(
        self,
        dag_id: str,
        dag_version_id: str,
        number: int,
        bundle_name: str | None = None,
        bundle_version: str | None = None,
    ) -> int:
        """Write a version's number on the letters naming it by UUID (keeping a bundle version the
        worker recorded); how many letters changed."""
        return self._run(
            "number_version",
            {
                "dag_id": dag_id,
                "dag_version_id": dag_version_id,
                "dag_version_number": number,
                "bundle_name": bundle_name,
                "bundle_version": bundle_version,
            },
        )

    def open_groups_by_version(self) -> builtins.list[tuple[str, str, int, int]]:
        """(dag_id, fingerprint, newest version failed on, letters) of the open letters that name a version."""
        return [
            (str(row["dag_id"]), str(row["fingerprint"]), int(row["failed_on"]), int(row["letters"]))
            for row in self._rows("open_groups_by_version")
        ]

    def record_dag_version(self, version: DagVersion) -> None:
        """The newest version Airflow has of its DAG, as the sweeper just saw it."""
        self._run("record_dag_version", asdict(version))

    def notice_fix(
        self,
        dag_id: str,
        fingerprint: str,
        version_number: int,
        failed_on: int,
        letters: int,
        deployed_at: datetime | None,
        tell: Callable[[Any, FixNotice, ProviderDatabase], builtins.list[Callable[[], Any]]],
    ) -> FixNotice | None:
        """Record that ``version_number`` may fix the group, once: ``tell(cursor, notice, db)``
        runs in the same transaction (the alert's outbox rows commit with the notice or not at all)
        and what it returns runs after the commit. None when the group was told about it already."""
        params = {
            "dag_id": dag_id,
            "fingerprint": fingerprint,
            "version_number": version_number,
            "failed_on": failed_on,
            "letters": letters,
            "deployed_at": deployed_at,
        }
        with self.db.transaction() as cur:
            cur.execute(query("insert_fix_notice"), params)
            rows = ProviderDatabase.rows(cur)
            if not rows:
                return None
            notice = FixNotice.from_row(rows[0])
            after = tell(cur, notice, self.db)
        for action in after:
            action()
        return notice

    def forget_closed_versions(self) -> tuple[int, int]:
        """Delete the DAG versions and notices no open letter is about; how many of each."""
        versions, notices = self._row("forget_closed_versions")
        return int(versions), int(notices)

    # -- impact (issue 48) -----------------------------------------------------------------------

    def set_impact(self, letter_id: int, impact: Impact) -> None:
        """Store what ``letter_id`` blocks, replacing what was stored."""
        self.set_impacts([letter_id], impact)

    def set_impacts(self, letter_ids: Sequence[int], impact: Impact) -> None:
        """Store ``impact`` as what each of ``letter_ids`` blocks (one task's letters in one DAG run), in
        one transaction; they no longer await it."""
        self._run(
            "upsert_letter_impact",
            {"letter_ids": list(letter_ids), "impact": json.dumps(impact.to_json(), sort_keys=True)},
        )

    def claim_impacts(
        self, limit: int, lease_seconds: float, min_age_seconds: float = 0.0
    ) -> builtins.list[tuple[Letter, int]]:
        """Letters awaiting their impact (oldest first, at most ``limit``, queued at least ``min_age_seconds``
        ago), each leased for ``lease_seconds`` and counted an attempt: ``(letter, attempts)``."""
        rows = self._rows(
            "claim_impacts",
            {"limit": limit, "lease_seconds": lease_seconds, "min_age_seconds": min_age_seconds},
        )
        return [(Letter.from_row(row), int(row["impact_attempts"])) for row in rows]

    def impact_not_computed(
        self, letter_ids: Sequence[int], reason: str, max_attempts: int, retry_seconds: float
    ) -> None:
        """The impact of ``letter_ids`` could not be computed: tried again later, or given up with
        ``reason`` once they were claimed ``max_attempts`` times (the sweeper's refresh then has them)."""
        self._run(
            "impact_not_computed",
            {
                "letter_ids": list(letter_ids),
                "reason": storable(redact(reason, limit=500)),
                "max_attempts": max_attempts,
                "retry_seconds": retry_seconds,
            },
        )

    @contextmanager
    def listening(self) -> Iterator[FilingListener]:
        """A :class:`FilingListener` on a dedicated connection, listening from now on; closed after."""
        conn = self.db.connect_dedicated()
        try:
            conn.autocommit = True
            conn.execute(query("listen_filed"))
            yield FilingListener(conn)
        finally:
            conn.close()

    @contextmanager
    def infra_watch_lead(self) -> Iterator[Callable[[], bool]]:
        """A dedicated session whose ``try_lead()`` takes the infra watcher's session lock if no other
        session holds it (True while this one holds it); the lock goes with the session, closed after."""
        conn = self.db.connect_dedicated()
        held = False

        def try_lead() -> bool:
            nonlocal held
            if not held:
                held = bool(conn.execute(query("try_infra_watch_lead")).fetchone()[0])
            return held

        try:
            conn.autocommit = True
            yield try_lead
        finally:
            conn.close()

    def impact(self, letter_id: int) -> StoredImpact | None:
        """What ``letter_id`` blocks, as last computed; None before it was."""
        rows = self._rows("letter_impact", {"letter_id": letter_id})
        return StoredImpact(Impact.from_json(rows[0]["impact"]), rows[0]["computed_at"]) if rows else None

    def letters_due_impact(self, stale_seconds: float, limit: int) -> builtins.list[Letter]:
        """Open letters whose impact is missing or older than ``stale_seconds`` (the database's clock), longest first."""
        return self._letters("letters_due_impact", {"stale_seconds": stale_seconds, "limit": limit})


@dataclass(frozen=True)
class StoredImpact:
    """A letter's impact and when it was computed (its deliveries' statuses are as of then)."""

    impact: Impact
    computed_at: datetime

    def to_json(self) -> dict[str, Any]:
        return {**self.impact.to_json(), "computed_at": self.computed_at.isoformat()}


def _actor(actor: str | Actor, missing: str) -> Actor:
    """An ``Actor``; a bare name is a verified one from the CLI's old call sites."""
    who = actor if isinstance(actor, Actor) else Actor(actor, "cli")
    if not (who.name or "").strip():
        raise ValueError(missing)
    return who
