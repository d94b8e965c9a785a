"""Replay jobs as rows: create, read, claim with a lease, cancel. Any process reads the same job."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from airflow_retry_provider.dlq.models import JobItem, Letter, ReplayJob, ReplayRequest, ReplayResult
from airflow_retry_provider.dlq.sql import query
from airflow_retry_provider.dlq.store import DeadLetterStore
from airflow_retry_provider.policy import redact


class JobError(ValueError):
    """A request about a job that cannot be honoured (unknown id, already finished); names the job."""


@dataclass(frozen=True)
class JobView:
    """A job with its letters' outcomes, as the progress page, the JSON API and the CLI show it."""

    job: ReplayJob
    items: tuple[JobItem, ...]

    @property
    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for item in self.items:
            if item.outcome != "pending":
                counts[item.outcome] = counts.get(item.outcome, 0) + 1
        return counts

    @property
    def done(self) -> int:
        return sum(1 for item in self.items if item.outcome != "pending")

    def to_json(self) -> dict[str, Any]:
        job = self.job
        return {
            "id": job.id,
            "status": job.status,
            "finished": job.finished,
            "actor": job.actor,
            "actor_verified": job.actor_verified,
            "os_user": job.os_user,
            "source": job.source,
            "reason": job.reason,
            "fix_version": job.fix_version,
            "processing_version": job.processing_version,
            "downstream": job.downstream,
            "dag_ids": list(job.dag_ids),
            "total": len(self.items),
            "done": self.done,
            "counts": self.counts,
            "results": [
                {
                    "letter_id": item.letter_id,
                    "outcome": item.outcome,
                    "replay_id": item.replay_id,
                    "replay_outcome": item.replay_outcome,
                    "detail": item.detail or "",
                }
                for item in self.items
            ],
            "created_at": job.created_at.isoformat(),
            "started_at": job.started_at.isoformat() if job.started_at else None,
            "finished_at": job.finished_at.isoformat() if job.finished_at else None,
            "cancelled_by": job.cancelled_by,
            "error": None,
        }


class JobStore:
    """The ``retry_replay_jobs`` and ``retry_replay_job_items`` tables; each method is one transaction."""

    def __init__(self, store: DeadLetterStore) -> None:
        self.store = store

    def create(self, request: ReplayRequest, letters: Sequence[Letter]) -> int:
        """A queued job for ``letters`` (in this order); the job id."""
        if not letters:
            raise JobError("letters: a replay job needs at least one letter")
        with self.store.transaction() as cur:
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
                },
            )
            job_id = int(cur.fetchone()[0])
            cur.execute(
                query("insert_job_items"), {"job_id": job_id, "letter_ids": [letter.id for letter in letters]}
            )
        return job_id

    def get(self, job_id: int) -> JobView | None:
        with self.store.transaction() as cur:
            cur.execute(query("get_job"), {"id": job_id})
            rows = self.store.rows(cur)
            if not rows:
                return None
            cur.execute(query("job_items"), {"job_id": job_id})
            items = tuple(JobItem.from_row(row) for row in self.store.rows(cur))
        return JobView(ReplayJob.from_row(rows[0]), items)

    def require(self, job_id: int) -> JobView:
        view = self.get(job_id)
        if view is None:
            raise JobError(f"job: {job_id} is not a replay job id")
        return view

    def results(self, job_id: int) -> list[ReplayResult]:
        return [
            ReplayResult(item.letter_id, item.outcome, item.replay_id, item.detail or "")
            for item in self.require(job_id).items
        ]

    def open_ids(self) -> list[int]:
        with self.store.transaction() as cur:
            cur.execute(query("open_job_ids"))
            return [int(row[0]) for row in cur.fetchall()]

    def cancel(self, job_id: int, actor: str) -> int:
        """Cancel a queued or running job: letters it has not claimed stay in ``dlq``. How many were left."""
        detail = redact(f"cancelled by {actor}")[:500]
        with self.store.transaction() as cur:
            cur.execute(query("cancel_job"), {"id": job_id, "actor": actor, "detail": detail})
            cancelled_id, left = cur.fetchone()
        if cancelled_id is None:
            view = self.require(job_id)
            raise JobError(
                f"job: {job_id} is {view.job.status}; only a queued or running job can be cancelled"
            )
        return int(left)

    # -- driving (dlq/driver.py) -------------------------------------------------------------

    def claim(self, owner: str, lease_seconds: int, job_id: int | None = None) -> ReplayJob | None:
        """Take the oldest open job nobody holds (or ``job_id``) for ``owner``; None when there is none."""
        with self.store.transaction() as cur:
            cur.execute(
                query("claim_job"), {"owner": owner, "lease_seconds": lease_seconds, "job_id": job_id}
            )
            rows = self.store.rows(cur)
        return ReplayJob.from_row(rows[0]) if rows else None

    def renew(self, job_id: int, owner: str, lease_seconds: int) -> bool:
        """Extend the lease; False when the job was cancelled or taken over (the driver stops)."""
        with self.store.transaction() as cur:
            cur.execute(
                query("renew_job_lease"), {"id": job_id, "owner": owner, "lease_seconds": lease_seconds}
            )
            return cur.fetchone() is not None

    def next_item(self, job_id: int) -> JobItem | None:
        with self.store.transaction() as cur:
            cur.execute(query("next_job_item"), {"job_id": job_id})
            rows = self.store.rows(cur)
        return JobItem.from_row(rows[0]) if rows else None

    def finish_item(self, item: JobItem, result: ReplayResult) -> None:
        with self.store.transaction() as cur:
            cur.execute(
                query("finish_job_item"),
                {
                    "job_id": item.job_id,
                    "position": item.position,
                    "outcome": result.outcome,
                    "detail": redact(result.detail)[:1000] if result.detail else None,
                    "replay_id": result.replay_id,
                },
            )

    def finish(self, job_id: int, owner: str) -> None:
        with self.store.transaction() as cur:
            cur.execute(query("finish_job"), {"id": job_id, "owner": owner})

    def release(self, job_id: int, owner: str) -> None:
        with self.store.transaction() as cur:
            cur.execute(query("release_job"), {"id": job_id, "owner": owner})
