"""The outcome sync: decides letters left in ``replaying`` from Airflow's state and try number.

A replayed task's own callbacks resolve its letter (success) or file it again (failure). What
they could not decide is decided here, by the driver (the claims it left open) and the sweeper
DAG (every letter in ``replaying``): success resolves, a newer failed try files the letter
again, and a claim whose clear never happened (lease expired, or the answer lost while Airflow
shows no new try) goes back to ``dlq`` (``abandoned``). A letter whose task instance is gone
from Airflow is parked. Letters in ``dlq`` whose task instance was since cleared by hand and
succeeded are resolved (``resolve_succeeded_in_dlq``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from airflow_retry_provider import metrics, settings
from airflow_retry_provider.dlq import announce
from airflow_retry_provider.dlq.models import Actor, Letter, NewLetter, SyncReport
from airflow_retry_provider.dlq.sql import query
from airflow_retry_provider.dlq.store import DeadLetterStore
from airflow_retry_provider.hooks.airflow_api import AirflowApi, AirflowApiError, TaskInstanceRef
from airflow_retry_provider.policy import redact

log = logging.getLogger(__name__)

SYNC_GRACE = timedelta(minutes=2)
NOT_CLEARED_STATES = ("failed", "upstream_failed")


class OutcomeSync:
    """Decides letters in ``replaying`` (and ``dlq`` letters since succeeded) from Airflow's state.

    :param store: the dead-letter store.
    :param api: Airflow's REST API, where the outcomes are read.
    :param replay_cap: replays allowed per letter, for a letter filed again (default
        ``[retry_provider] replay_max_attempts``).
    """

    def __init__(self, store: DeadLetterStore, api: AirflowApi, *, replay_cap: int | None = None) -> None:
        self.store = store
        self.api = api
        self.replay_cap = replay_cap if replay_cap is not None else settings.replay_max_attempts()

    def sync_outcomes(
        self,
        limit: int = 500,
        grace: timedelta = SYNC_GRACE,
        now: datetime | None = None,
        source: str = "sweeper",
        open_claims_only: bool = False,
    ) -> SyncReport:
        """Decide letters in ``replaying`` from Airflow's state and try number.

        Success resolves; a newer failed try (ended at least ``grace`` ago, else its own callback
        files it) files the letter again; a claim not confirmed cleared whose lease expired, or
        whose clear's answer was lost, while Airflow still shows the failed try it was claimed at,
        goes back to ``dlq`` (``abandoned``: the clear never happened). ``open_claims_only`` looks
        only at those claims (the driver's frequent pass); the sweeper looks at every letter.
        """
        api = self.api
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
                    announce.filed(self.store, again, result)
                continue
            claim_open = row.get("replay_id") is not None and row.get("cleared_at") is None
            undecided = row.get("replay_outcome") == "unknown" or bool(row.get("lease_expired"))
            if claim_open and undecided:
                if ti.state in NOT_CLEARED_STATES and ti.try_number == row["try_number_before"]:
                    if self._abandon(letter, row, source):
                        released.append(letter.id)
                    continue
                if row["replay_outcome"] == "pending":  # lease expired, but Airflow shows the clear happened
                    detail = f"lease expired; Airflow shows the clear happened (state {ti.state}, try {ti.try_number})"
                    self.store.mark_replay_unknown(row["replay_id"], detail)
            waiting.append(letter.id)
        return SyncReport(tuple(resolved), tuple(refiled), tuple(waiting), tuple(errors), tuple(released))

    def _park_vanished(self, letter: Letter) -> None:
        """Park a replaying letter whose task instance Airflow no longer has, and announce it (once)."""
        reason = "the task instance or its DAG run no longer exists in Airflow (404); parked by the sweeper"
        if self.store.park_vanished(letter.id, reason):
            log.warning("airflow-retry-provider: letter %s parked: %s", letter.id, reason)
            announce.parked(self.store, letter, reason)

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
        api = self.api
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
        **ti.version_fields(),  # the newer try's version, as Airflow reports it
    )
