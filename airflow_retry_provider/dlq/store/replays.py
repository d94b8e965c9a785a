"""The ``retry_replays`` table: a letter's claim, what Airflow's answer to its clear did, the sync's pages of claims.

Each method is one transaction and does a whole atomic step: the pace slot, the claim, the job
item and the letter's event commit together or not at all (``dlq/replay.py`` and ``dlq/sync.py``
decide, these apply).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.dlq.decide import pace_wait
from airflow_retry_provider.dlq.models import Actor, Claim, Letter, ReplayRequest
from airflow_retry_provider.dlq.sql import query
from airflow_retry_provider.dlq.store.base import QueueStore, record
from airflow_retry_provider.policy import redact


@dataclass(frozen=True)
class ReplayingPage:
    """A page of the sync's pass (:meth:`ReplayStore.replaying_page`): when the pass started, and its rows."""

    since: datetime
    rows: list[dict[str, Any]]


class TaskInstanceKey(Protocol):
    """A task instance as a letter or Airflow's answer names it."""

    @property
    def dag_id(self) -> str: ...
    @property
    def run_id(self) -> str: ...
    @property
    def task_id(self) -> str: ...
    @property
    def map_index(self) -> int: ...


class ReplayStore(QueueStore):
    """Claims and clears of letters; each public method is one transaction.

    :param db: the provider's database.
    """

    def claim(
        self,
        letter: Letter,
        request: ReplayRequest,
        *,
        replay_cap: int,
        lease_seconds: int,
        rate_per_minute: int | None = None,
        job_id: int | None = None,
        position: int | None = None,
    ) -> Claim:
        """Take a pace slot (unless ``rate_per_minute`` is None) and claim ``letter`` in one transaction,
        or say how long to wait for a slot.

        The deployment's pace is counted over every job and process under an advisory lock
        (:func:`~airflow_retry_provider.dlq.decide.pace_wait`). The slot is the claim's
        ``clear_sent_at``: the clear goes to Airflow right after this commits. The claim, its replay
        row, the job item's replay and the letter's ``claimed`` event commit together.
        """
        with self.db.transaction() as cur:
            if rate_per_minute is not None:
                cur.execute(query("pace_lock"))
                cur.execute(query("clears_in_window"))
                clears, window_wait, since_last = cur.fetchone()
                wait = pace_wait(
                    clears, window_wait.total_seconds(), since_last.total_seconds(), rate_per_minute
                )
                if wait > 0:
                    return Claim(None, wait=wait)
            if job_id is not None:  # a cancel that landed first leaves the letter alone
                cur.execute(query("lock_pending_job_item"), {"job_id": job_id, "position": position})
                if cur.fetchone() is None:
                    return Claim(None)
            why = redact(f"replay requested by {request.who.label()}: {request.reason}", 500)
            cur.execute(
                query("claim_for_replay"), {"id": letter.id, "replay_cap": replay_cap, "status_reason": why}
            )
            row = cur.fetchone()
            if row is None:
                return Claim(None)
            try_number = int(row[1])
            replay_id = _insert_replay(cur, letter.id, try_number, request, job_id, lease_seconds, send=True)
            if job_id is not None and position is not None:
                cur.execute(
                    query("set_job_item_replay"),
                    {"job_id": job_id, "position": position, "replay_id": replay_id},
                )
            refs = {"job_id": job_id, "replay_id": replay_id, "try_number": try_number}
            record(cur, letter.id, "claimed", request.who, request.reason, **refs)
            return Claim(replay_id)

    def clear_failed(
        self, letter: Letter, replay_id: int, job_id: int | None, detail: str, *, lost: bool
    ) -> None:
        """Airflow refused the clear: the letter goes back to ``dlq``; or its answer was ``lost``: the letter
        stays ``replaying`` and the sync decides. With the letter's event."""
        with self.db.transaction() as cur:
            if lost:
                cur.execute(query("mark_replay_unknown"), {"id": replay_id, "detail": detail})
            else:
                parameters = {"replay_id": replay_id, "detail": detail, "status_reason": detail[:500]}
                cur.execute(query("release_failed_claim"), parameters)
            refs = {"job_id": job_id, "replay_id": replay_id, "try_number": letter.try_number}
            record(
                cur, letter.id, "unknown" if lost else "clear-failed", Actor.system("driver"), detail, **refs
            )

    def cleared(
        self,
        letter: Letter,
        replay_id: int,
        request: ReplayRequest,
        job_id: int | None,
        cleared: Sequence[TaskInstanceKey],
        note: str,
        lease_seconds: int,
    ) -> None:
        """Airflow cleared ``cleared``: the replay is ``cleared`` (or reopened, a late clear) and the ``dlq``
        letters of the downstream task instances it reran join it, in one transaction."""
        touched = ", ".join(_ti_label(ti) for ti in cleared)
        driver = Actor.system("driver")
        with self.db.transaction() as cur:
            cur.execute(query("mark_replay_cleared"), {"id": replay_id, "detail": note})
            if (
                cur.fetchone() is None
            ):  # the claim was closed meanwhile (past its lease): Airflow cleared anyway
                self._late_clear(cur, letter, replay_id, request, job_id, touched, lease_seconds)
            else:
                refs = {"job_id": job_id, "replay_id": replay_id, "try_number": letter.try_number}
                record(cur, letter.id, "cleared", driver, f"cleared {touched}", **refs)
            for ti in cleared:
                if (ti.task_id, ti.map_index) != (letter.task_id, letter.map_index):
                    why = f"cleared downstream of letter {letter.id} ({letter.task_id})"
                    _join(cur, ti, why, request, job_id, lease_seconds)

    @staticmethod
    def _late_clear(
        cur: Any,
        letter: Letter,
        replay_id: int,
        request: ReplayRequest,
        job_id: int | None,
        touched: str,
        lease_seconds: int,
    ) -> None:
        """Airflow confirmed a clear whose claim another process had closed: the letter is replaying again.

        Its rerun may have ended first (a slow answer): that end closed this replay and counted it,
        so the clear is only stamped. Otherwise the clear outlived its lease (at least three API
        timeouts) and the task runs now: the replay another process abandoned is open again, cleared
        (its failure counts toward the replay cap, its success resolves it). When the letter has a
        newer claim, it joins a new replay already cleared instead (as a downstream letter joins one).
        A letter a person parked or dismissed meanwhile keeps that status; its history says what happened.
        """
        driver = Actor.system("driver")
        cur.execute(query("stamp_decided_clear"), {"id": replay_id})
        if cur.fetchone() is not None:
            why = f"Airflow confirmed the clear ({touched}) after its rerun had ended"
            record(cur, letter.id, "cleared", driver, why, job_id=job_id, replay_id=replay_id)
            return
        why = f"Airflow confirmed the clear ({touched}) after its claim was closed"
        cur.execute(query("reopen_late_clear"), {"id": replay_id, "detail": why, "status_reason": why[:500]})
        if cur.fetchone() is not None:  # the claim was abandoned while its clear was on its way: open again
            record(cur, letter.id, "cleared", driver, why, job_id=job_id, replay_id=replay_id)
        elif not _join(cur, letter, why, request, job_id, lease_seconds):
            record(cur, letter.id, "cleared", driver, why, job_id=job_id)

    # -- the sync's reads and its one write of a claim (dlq/sync.py) ------------------------------

    def replaying_page(
        self,
        since: datetime | None,
        limit: int,
        *,
        open_claims_only: bool = False,
        letter_id: int | None = None,
    ) -> ReplayingPage:
        """Letters in ``replaying`` (or only the open claims that need a decision) not looked at since
        ``since`` (None: a new pass, from PostgreSQL's clock now), each with its open claim, stamped as
        looked at; committed before any is decided."""
        statement = "open_claims" if open_claims_only else "replaying_letters"
        with self.db.transaction() as cur:
            if since is None:
                cur.execute(query("database_now"))
                since = cur.fetchone()[0]
            cur.execute(query(statement), {"limit": limit, "since": since, "letter_id": letter_id})
            return ReplayingPage(since, ProviderDatabase.rows(cur))

    def abandon(self, letter: Letter, replay_id: int, detail: str, *, lost: bool, source: str) -> bool:
        """A claim whose clear never happened goes back to ``dlq`` (``abandoned``), with the letter's event."""
        with self.db.transaction() as cur:
            cur.execute(query("abandon_claim"), {"replay_id": replay_id, "detail": detail})
            if cur.fetchone() is None:
                return False
            event = "clear-failed" if lost else "lease-expired"
            refs = {"replay_id": replay_id, "try_number": letter.try_number}
            record(cur, letter.id, event, Actor.system(source), detail, **refs)
            return True


def _insert_replay(
    cur: Any,
    letter_id: int,
    try_number: int,
    request: ReplayRequest,
    job_id: int | None,
    lease_seconds: int,
    send: bool,
) -> int:
    parameters = {
        **request.replay_params(),
        "letter_id": letter_id,
        "try_number_before": try_number,
        "job_id": job_id,
        "lease_seconds": lease_seconds,
        "send": send,
    }
    cur.execute(query("insert_replay"), parameters)
    return int(cur.fetchone()[0])


def _join(
    cur: Any, ti: TaskInstanceKey, why: str, request: ReplayRequest, job_id: int | None, lease_seconds: int
) -> bool:
    """The ``dlq`` letter of ``ti`` (if any) joins a clear Airflow made: ``replaying``, its replay cleared."""
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
        return False
    letter_id, try_number = int(row[0]), int(row[1])
    replay_id = _insert_replay(cur, letter_id, try_number, request, job_id, lease_seconds, send=False)
    refs = {"job_id": job_id, "replay_id": replay_id, "try_number": try_number}
    record(cur, letter_id, "claimed", request.who, why, **refs)
    record(cur, letter_id, "cleared", Actor.system("driver"), why, **refs)
    return True


def _ti_label(ti: TaskInstanceKey) -> str:
    return ti.task_id if ti.map_index == -1 else f"{ti.task_id}[{ti.map_index}]"
