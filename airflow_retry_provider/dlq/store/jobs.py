"""Replay jobs and their items as rows: create, read, claim with a lease, cancel, stop. Any process reads the same job.

A job of more than one letter may start with a canary (:meth:`JobStore.create`): the driver clears
that one letter first and waits for its outcome (``dlq/driver.py``); what it waits for, until when,
and why a job stopped are columns of the job, so any driver continues where another left off. The
rising pace after the canary and the stop rule are ``dlq/decide.py``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.dlq.decide import (
    STOP_AFTER_FAILURES,
    CanaryState,
    failures_in_a_row,
    pace_steps_json,
    stop_rule,
)
from airflow_retry_provider.dlq.models import (
    JobItem,
    Letter,
    ReplayJob,
    ReplayRequest,
    ReplayResult,
    json_of,
    newest_letter,
)
from airflow_retry_provider.dlq.sql import query
from airflow_retry_provider.dlq.store.base import QueueStore
from airflow_retry_provider.policy import redact
from airflow_retry_provider.states import ItemOutcome, JobStatus


class JobError(ValueError):
    """A request about a job that cannot be honoured (unknown id, already finished); names the job."""


@dataclass(frozen=True)
class Verdict:
    """Was it the fix? What became of the job's cleared letters after their replay.

    :param resolved: the task instance succeeded (the fix resolved the letter).
    :param same_cause: filed again with the root cause (fingerprint) it had: the fix did not work.
    :param new_cause: filed again with another root cause: a new problem.
    :param undecided: cleared, outcome not known yet.
    """

    resolved: int = 0
    same_cause: int = 0
    new_cause: int = 0
    undecided: int = 0

    def lines(self) -> list[str]:
        found = [f"{self.resolved} resolved by the fix"]
        if self.same_cause:
            found.append(f"{self.same_cause} failed again with the same root cause: the fix did not work")
        if self.new_cause:
            found.append(f"{self.new_cause} failed again with another root cause: a new problem")
        if self.undecided:
            found.append(f"{self.undecided} not decided yet")
        return found

    def to_json(self) -> dict[str, Any]:
        return {**json_of(self), "summary": "; ".join(self.lines())}


# fmt: off
_REQUEST_FIELDS = ("id", "status", "finished", "actor", "actor_verified", "os_user", "source", "reason",
                   "fix_version", "processing_version", "downstream", "run_on_latest_version")
# fmt: on
"""What a job's JSON says of it first: what was asked, by whom, and where it stands."""


@dataclass(frozen=True)
class JobView:
    """A job with its letters' outcomes, as the progress page, the JSON API and the CLI show it."""

    job: ReplayJob
    items: tuple[JobItem, ...]
    counts: dict[str, int]
    """Its letters' outcomes (pending ones aside), by outcome."""
    verdict: Verdict = Verdict()

    @property
    def canary(self) -> JobItem | None:
        """The item cleared first and alone, or None for a job without a canary."""
        position = self.job.canary_position
        return next((item for item in self.items if item.position == position), None)

    @property
    def phase(self) -> str:
        """``canary`` (its outcome awaited), ``rest`` (at the rising pace), or the job's end."""
        job = self.job
        if job.finished:
            return job.status
        if job.in_canary:
            return "canary"
        return "rest"

    @property
    def done(self) -> int:
        return sum(1 for item in self.items if item.outcome != ItemOutcome.PENDING)

    def to_json(self) -> dict[str, Any]:
        job, shown = self.job, json_of(self.job)
        return {
            **{name: getattr(job, name) for name in _REQUEST_FIELDS},
            "dag_ids": list(job.dag_ids),
            "phase": self.phase,
            "canary": self._canary_json(),
            "pace_steps": pace_steps_json(),
            "stop_reason": job.stop_reason,
            "verdict": self.verdict.to_json(),
            "total": len(self.items),
            "done": self.done,
            "counts": self.counts,
            "results": [
                {**item.result().to_json(), "replay_outcome": item.replay_outcome} for item in self.items
            ],
            **{name: shown[name] for name in ("created_at", "started_at", "finished_at", "cancelled_by")},
            "error": None,
        }

    def _canary_json(self) -> dict[str, Any] | None:
        canary, job = self.canary, self.job
        if canary is None:
            return None
        if job.paced_since is not None:
            state = "succeeded"
        elif job.status == JobStatus.STOPPED and canary.outcome != ItemOutcome.PENDING:
            state = "failed"
        else:
            state = "waiting"
        return {
            "letter_id": canary.letter_id,
            "state": state,
            "outcome": canary.outcome,
            "replay_outcome": canary.replay_outcome,
            "wait_until": job.canary_until.isoformat() if job.canary_until else None,
            "succeeded_at": job.paced_since.isoformat() if job.paced_since else None,
        }


@dataclass(frozen=True)
class JobTurn:
    """What a driver reads before each letter of a job, its lease just taken or renewed
    (:meth:`JobStore.claim`, :meth:`JobStore.turn`): one snapshot, read in one transaction.

    A turn that finds nothing left to clear, past its canary, with ``decide.stop_rule`` silent, ends
    the job ``done`` in the same transaction (``ended``).
    """

    job: ReplayJob
    failures: int
    """How many of the job's newest decided replays failed in a row (the stop rule's input)."""
    next_item: JobItem | None
    """The next letter to clear, None when every one was."""
    letter: Letter | None
    """The next item's letter, None when there is no next item or the letter no longer exists."""
    total: int
    """How many letters the job has."""
    ended: JobView | None = None
    """The job as it ended ``done`` with this turn, None while it goes on."""
    another_waits: bool = False
    """With ``ended``: another open job nobody holds waits (a driver's round goes on to claim it)."""


class JobStore(QueueStore):
    """The ``retry_replay_jobs`` and ``retry_replay_job_items`` tables; each method is one transaction.

    :param db: the provider's database.
    """

    def create(
        self,
        request: ReplayRequest,
        letters: Sequence[Letter],
        canary: bool = False,
        canary_letter_id: int | None = None,
    ) -> int:
        """A queued job for ``letters`` (in this order); the job id.

        With ``canary`` (or a ``canary_letter_id``, which must be one of ``letters``) a job of more than
        one letter clears that letter first, else the newest, and waits for its outcome.
        """
        if not letters:
            raise JobError("letters: a replay job needs at least one letter")
        position = None
        if canary_letter_id is not None:
            ids = [letter.id for letter in letters]
            if canary_letter_id not in ids:
                raise JobError(
                    f"canary: letter {canary_letter_id} is not one of the letters this job replays"
                )
            position = ids.index(canary_letter_id)
        elif canary:
            position = list(letters).index(newest_letter(letters))
        if len(letters) < 2:
            position = None
        with self.db.transaction() as cur:
            cur.execute(
                query("insert_job"),
                {
                    "actor": request.actor,
                    "actor_verified": request.actor_verified,
                    "os_user": request.os_user,
                    "source": request.source,
                    "reason": redact(request.reason),
                    "fix_version": request.fix_version,
                    "processing_version": request.processing_version,
                    "downstream": request.downstream,
                    "dag_ids": sorted({letter.dag_id for letter in letters}),
                    "canary_position": position,
                    "run_on_latest_version": request.run_on_latest_version,
                },
            )
            job_id = int(cur.fetchone()[0])
            cur.execute(
                query("insert_job_items"), {"job_id": job_id, "letter_ids": [letter.id for letter in letters]}
            )
        return job_id

    def get(self, job_id: int) -> JobView | None:
        with self.db.transaction() as cur:
            return self._view(cur, job_id)

    def _view(self, cur: Any, job_id: int) -> JobView | None:
        """The job with its items, their counts and its verdict, read in ``cur``'s transaction; None without it."""
        cur.execute(query("get_job"), {"id": job_id})
        rows = ProviderDatabase.rows(cur)
        if not rows:
            return None
        cur.execute(query("job_items"), {"job_id": job_id})
        items = tuple(JobItem.from_row(row) for row in ProviderDatabase.rows(cur))
        counts: dict[str, int] = {}
        for item in items:
            if item.outcome != ItemOutcome.PENDING:
                counts[item.outcome] = counts.get(item.outcome, 0) + 1
        cur.execute(query("job_verdict"), {"id": job_id})
        verdict = Verdict(*(int(n) for n in cur.fetchone()))
        return JobView(ReplayJob.from_row(rows[0]), items, counts, verdict)

    def require(self, job_id: int) -> JobView:
        view = self.get(job_id)
        if view is None:
            raise JobError(f"job: {job_id} is not a replay job id")
        return view

    def results(self, job_id: int) -> list[ReplayResult]:
        return [item.result() for item in self.require(job_id).items]

    def cancel(self, job_id: int, actor: str) -> int:
        """Cancel a queued or running job: letters it has not claimed stay in ``dlq``. How many were left."""
        detail = redact(f"cancelled by {actor}")[:500]
        cancelled_id, left = self._row("cancel_job", {"id": job_id, "actor": actor, "detail": detail})
        if cancelled_id is None:
            view = self.require(job_id)
            raise JobError(
                f"job: {job_id} is {view.job.status}; only a queued or running job can be cancelled"
            )
        return int(left)

    # -- driving (dlq/driver.py) -------------------------------------------------------------

    def claim(self, owner: str, lease_seconds: int, job_id: int | None = None) -> JobTurn | None:
        """Take the oldest open job nobody holds (or ``job_id``) for ``owner`` and read its first turn,
        in one transaction; None when there is none."""
        parameters = {"owner": owner, "lease_seconds": lease_seconds, "job_id": job_id}
        with self.db.transaction() as cur:
            cur.execute(self._query("claim_job"), parameters)
            rows = ProviderDatabase.rows(cur)
            return self._turn(cur, int(rows[0]["id"]), owner) if rows else None

    def turn(
        self, job_id: int, owner: str, lease_seconds: int, done: tuple[JobItem, ReplayResult] | None = None
    ) -> JobTurn | None:
        """Record the letter just done (``done``: its item and what became of it), renew the lease and read
        the job's next turn, in one transaction; None when the job was cancelled, stopped or taken over
        (the driver stops; the letter done is recorded all the same)."""
        with self.db.transaction() as cur:
            if done is not None:
                cur.execute(self._query("finish_job_item"), _finished_item(*done))
            cur.execute(
                self._query("renew_job_lease"), {"id": job_id, "owner": owner, "lease_seconds": lease_seconds}
            )
            if cur.fetchone() is None:
                return None
            return self._turn(cur, job_id, owner)

    def _turn(self, cur: Any, job_id: int, owner: str) -> JobTurn:
        """The job, its failures in a row, its next item with its letter, and its size, in ``cur``'s
        transaction; the job ended ``done`` when nothing is left to clear and the stop rule is silent."""
        cur.execute(self._query("get_job"), {"id": job_id})
        job = ReplayJob.from_row(ProviderDatabase.rows(cur)[0])
        cur.execute(self._query("last_decided_replays"), {"id": job_id, "limit": STOP_AFTER_FAILURES})
        failures = failures_in_a_row([row["outcome"] for row in ProviderDatabase.rows(cur)])
        cur.execute(self._query("next_job_item"), {"job_id": job_id})
        item = next((JobItem.from_row(row) for row in ProviderDatabase.rows(cur)), None)
        letter = None
        if item is not None:
            cur.execute(self._query("get_letter"), {"id": item.letter_id})
            letter = next((Letter.from_row(row) for row in ProviderDatabase.rows(cur)), None)
        cur.execute(self._query("job_size"), {"job_id": job_id})
        turn = JobTurn(job, failures, item, letter, int(cur.fetchone()[0]))
        if item is not None or job.in_canary or stop_rule(failures) is not None:
            return turn
        cur.execute(self._query("finish_job"), {"id": job_id, "owner": owner})
        row = cur.fetchone()
        assert row is not None  # the job is this turn's: claimed or its lease renewed in this transaction
        return replace(turn, ended=self._view(cur, job_id), another_waits=bool(row[0]))

    def release(self, job_id: int, owner: str) -> None:
        self._run("release_job", {"id": job_id, "owner": owner})

    # -- the canary and the rising pace (dlq/driver.py) -------------------------------------

    def canary(self, job_id: int) -> CanaryState | None:
        """The job's canary item, its replay's outcome and whether its wait is over; None without one."""
        rows = self._rows("canary_of_job", {"id": job_id})
        if not rows:
            return None
        row = rows[0]
        return CanaryState(
            letter_id=int(row["letter_id"]),
            outcome=row["outcome"],
            replay_id=row["replay_id"],
            detail=row["detail"],
            replay_outcome=row["replay_outcome"],
            replay_detail=redact(row["replay_detail"]) if row["replay_detail"] else None,
            letter_status=row["letter_status"],
            letter_reason=redact(row["letter_reason"]) if row["letter_reason"] else None,
            overdue=bool(row["overdue"]),
        )

    def wait_for_canary(self, job_id: int, owner: str, timeout_seconds: int) -> None:
        """Start the canary's wait (once: a driver that takes the job over keeps the deadline)."""
        self._run("wait_for_canary", {"id": job_id, "owner": owner, "timeout_seconds": timeout_seconds})

    def pass_canary(self, job_id: int, owner: str) -> bool:
        """The canary resolved: the rest follow at the rising pace from now."""
        return self._row("pass_canary", {"id": job_id, "owner": owner}) is not None

    def pace(self, job_id: int) -> tuple[int, float]:
        """Clears the job sent in its current pace step, and seconds since its last clear."""
        step_clears, since_clear = self._row("job_pace", {"id": job_id})
        return int(step_clears), since_clear.total_seconds()

    def stop(self, job_id: int, owner: str, reason: str) -> JobView | None:
        """End the job ``stopped`` (letters it has not claimed stay in ``dlq`` untouched) and read it as it
        ended, in one transaction; None when this driver no longer held it."""
        reason = redact(reason)[:1000]
        detail = redact(f"not replayed: the job stopped ({reason})")[:1000]
        parameters = {"id": job_id, "owner": owner, "reason": reason, "detail": detail}
        with self.db.transaction() as cur:
            cur.execute(self._query("stop_job"), parameters)
            stopped_id, _ = cur.fetchone()
            return None if stopped_id is None else self._view(cur, job_id)


def _finished_item(item: JobItem, result: ReplayResult) -> dict[str, Any]:
    """The parameters of ``finish_job_item``: the item's outcome, its detail redacted."""
    return {
        "job_id": item.job_id,
        "position": item.position,
        "outcome": result.outcome,
        "detail": redact(result.detail)[:1000] if result.detail else None,
        "replay_id": result.replay_id,
    }
