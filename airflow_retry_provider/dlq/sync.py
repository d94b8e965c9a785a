"""The outcome sync: decides letters left in ``replaying`` from Airflow's state and try number.

A replayed task's own callbacks resolve its letter (success) or file it again (failure). What
they could not decide is decided here, by the driver (the claims it left open) and the sweeper
DAG (every letter in ``replaying``, each once per sweep): success resolves; a newer failed try
files the letter again; a clear that happened whose task instance ended without succeeding
(``upstream_failed``, ``skipped``, ``removed``, or ``failed`` with no newer try) is a failed
replay (back to ``dlq`` counted, ``parked`` at the cap); a claim whose clear never happened
(lease expired, or the answer lost while Airflow shows the claimed try still failed) goes back
to ``dlq`` (``abandoned``). A letter whose task instance is gone from Airflow is parked. Letters
at rest (``dlq``, ``parked``) whose task instance was since cleared by hand and succeeded are
resolved (``resolve_succeeded_in_dlq``): one REST call per open letter, never a DAG's history.
The state tables are in ``dlq/states.py`` (and docs/ARCHITECTURE.md).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from airflow_retry_provider import metrics, settings
from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.dlq import announce
from airflow_retry_provider.dlq.models import Actor, Letter, NewLetter, SyncReport
from airflow_retry_provider.dlq.sql import query
from airflow_retry_provider.dlq.store import DeadLetterStore
from airflow_retry_provider.hooks.airflow_api import AirflowApi, AirflowApiError, TaskInstanceRef
from airflow_retry_provider.policy import redact

log = logging.getLogger(__name__)

SYNC_GRACE = timedelta(minutes=2)
#: the states a cleared task instance can end in without succeeding
ENDED_WITHOUT_SUCCESS = ("failed", "upstream_failed", "skipped", "removed")


class OutcomeSync:
    """Decides letters in ``replaying`` (and letters at rest since succeeded) from Airflow's state.

    :param store: the dead-letter store.
    :param api: Airflow's REST API, where the outcomes are read.
    :param replay_cap: replays allowed per letter, for a letter filed again (default
        ``[retry_provider] replay_max_attempts``).
    :param replay_timeout: how long a replay whose clear happened may wait for its task instance to end
        (default ``[retry_provider] replay_timeout_seconds``); then it counts as failed.
    """

    def __init__(
        self,
        store: DeadLetterStore,
        api: AirflowApi,
        *,
        replay_cap: int | None = None,
        replay_timeout: timedelta | None = None,
    ) -> None:
        self.store = store
        self.api = api
        self.replay_cap = replay_cap if replay_cap is not None else settings.replay_max_attempts()
        self.replay_timeout = (
            replay_timeout
            if replay_timeout is not None
            else timedelta(seconds=settings.replay_timeout_seconds())
        )

    def sync_outcomes(
        self,
        limit: int = 500,
        grace: timedelta = SYNC_GRACE,
        now: datetime | None = None,
        source: str = "sweeper",
        open_claims_only: bool = False,
    ) -> SyncReport:
        """Decide every letter in ``replaying`` once, from Airflow's state and try number, ``limit`` at a time.

        Success resolves; a newer failed try (ended at least ``grace`` ago, else its own callback
        files it) files the letter again; a clear that happened (confirmed, or Airflow shows the
        task instance moved on) whose task instance ended without succeeding is a failed replay;
        a claim not confirmed cleared whose lease expired, or whose clear's answer was lost, while
        Airflow still shows the failed try it was claimed at, goes back to ``dlq`` (``abandoned``:
        the clear never happened). ``open_claims_only`` looks only at those claims (the driver's
        frequent pass); the sweeper looks at every letter. Each letter looked at is stamped, so
        letters Airflow leaves undecided rotate behind the others instead of starving them.
        """
        now = now or datetime.now(timezone.utc)
        report = _new_report()
        since = self._db_now()
        statement = query("open_claims" if open_claims_only else "replaying_letters")
        while True:
            rows = self._page(statement, {"limit": limit, "since": since, "letter_id": None})
            for row in rows:
                self._sync_one(row, now, grace, source, report)
            if len(rows) < limit:
                break
        return _sync_report(report)

    def sync_letter(
        self,
        letter_id: int,
        grace: timedelta = SYNC_GRACE,
        now: datetime | None = None,
        source: str = "driver",
    ) -> SyncReport:
        """Decide one letter in ``replaying`` (the canary a driver waits for) as ``sync_outcomes`` does.

        One REST call, about that letter's task instance; none when the letter is not replaying (its
        callback decided it already) or another process is deciding it right now.
        """
        now = now or datetime.now(timezone.utc)
        report = _new_report()
        parameters = {"limit": 1, "since": self._db_now(), "letter_id": letter_id}
        for row in self._page(query("replaying_letters"), parameters):
            self._sync_one(row, now, grace, source, report)
        return _sync_report(report)

    def _page(self, statement: str, parameters: dict[str, Any]) -> list[dict[str, Any]]:
        """The letters ``statement`` picks (and stamps as looked at), committed before any is decided."""
        with self.store.db.transaction() as cur:
            cur.execute(statement, parameters)
            return ProviderDatabase.rows(cur)

    def _db_now(self) -> datetime:
        """PostgreSQL's clock: letters stamped before it were not looked at by this pass."""
        with self.store.db.transaction() as cur:
            cur.execute(query("database_now"))
            value: datetime = cur.fetchone()[0]
        return value

    def _sync_one(
        self,
        row: Mapping[str, Any],
        now: datetime,
        grace: timedelta,
        source: str,
        report: dict[str, list[Any]],
    ) -> None:
        letter = Letter.from_row(row)
        try:
            ti = self.api.task_instance(letter.dag_id, letter.run_id, letter.task_id, letter.map_index)
        except AirflowApiError as exc:
            if exc.status_code == 404:  # the task instance or its run was deleted: parked once
                self._park_vanished(letter)
                return
            metrics.incr("sweeper", "error")
            report["errors"].append(f"letter {letter.id}: {redact(str(exc))}")
            return
        if ti.state == "success":
            if self.store.resolve_replaying(
                letter.dag_id, letter.run_id, letter.task_id, letter.map_index, source=source
            ):
                report["resolved"].append(letter.id)
            return
        if ti.end_date is not None and now - ti.end_date < grace:  # just ended: its own callback's turn
            report["waiting"].append(letter.id)
            return
        if ti.state == "failed" and ti.try_number > letter.try_number:
            again = refiled_letter(letter, ti)
            result = self.store.file(again, self.replay_cap)
            if result.changed:
                report["refiled"].append(letter.id)
                announce.filed(self.store.db, again, result)
            return
        replay_id = row.get("replay_id")
        if replay_id is None:  # replaying with no open claim: nothing will decide it, so it rests again
            if self.store.release_unclaimed(letter.id):
                report["released"].append(letter.id)
            return
        still_claimed_try = ti.state == "failed" and ti.try_number == row["try_number_before"]
        happened = (
            row.get("cleared_at") is not None
            or not still_claimed_try
            or cleared_by(
                ti.note, int(replay_id)
            )  # e.g. marked failed by hand after a clear whose answer was lost
        )
        undecided = row.get("replay_outcome") == "unknown" or bool(row.get("lease_expired"))
        if not happened:
            if undecided and self._abandon(letter, row, source):
                report["released"].append(letter.id)
            elif not undecided:
                report["waiting"].append(letter.id)
            return
        since = row.get("cleared_at") or row.get("replay_requested_at")
        timed_out = since is not None and now - since >= self.replay_timeout
        if ti.state in ENDED_WITHOUT_SUCCESS or timed_out:
            detail = f"the replayed task instance ended {ti.state} at try {ti.try_number} without succeeding"
            if ti.state not in ENDED_WITHOUT_SUCCESS:
                detail = (
                    f"the replayed task instance is still {ti.state} at try {ti.try_number} "
                    f"{int(self.replay_timeout.total_seconds())} s after the clear: the replay timed out"
                )
            status = self.store.end_replay(letter.id, int(replay_id), detail, self.replay_cap, source)
            if status is not None:
                report["refiled"].append(letter.id)
                if status == "parked":
                    announce.parked(self.store.db, letter, detail)
            return
        if (
            row.get("cleared_at") is None
            and row.get("replay_outcome") == "pending"
            and row.get("lease_expired")
        ):
            detail = (
                f"lease expired; Airflow shows the clear happened (state {ti.state}, try {ti.try_number})"
            )
            self.store.mark_replay_unknown(int(replay_id), detail)
        report["waiting"].append(letter.id)

    def _park_vanished(self, letter: Letter) -> None:
        """Park a replaying letter whose task instance Airflow no longer has, and announce it (once)."""
        reason = "the task instance or its DAG run no longer exists in Airflow (404); parked by the sweeper"
        if self.store.park_vanished(letter.id, reason):
            log.warning("airflow-retry-provider: letter %s parked: %s", letter.id, reason)
            announce.parked(self.store.db, letter, reason)

    def _abandon(self, letter: Letter, row: Mapping[str, Any], source: str) -> bool:
        lost = row["replay_outcome"] == "unknown"
        detail = (
            f"the clear's answer was lost and Airflow shows try {row['try_number_before']} still failed: "
            "the clear never happened; back to dlq"
            if lost
            else "the claim's lease expired before any clear: back to dlq"
        )
        with self.store.db.transaction() as cur:
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

    def resolve_succeeded_in_dlq(self, dag_ids: Sequence[str] | None = None, limit: int = 500) -> list[int]:
        """Resolve letters at rest (``dlq``, ``parked``) whose task instance has since succeeded (cleared by hand).

        One REST call per open letter, each letter once per call of this, ``limit`` letters at a
        time: the cost is bounded by the number of open letters, not by the DAGs' history.
        """
        since = self._db_now()
        resolved = []
        while True:
            with self.store.db.transaction() as cur:
                cur.execute(
                    query("resting_letters_due"),
                    {
                        "since": since,
                        "limit": limit,
                        "dag_ids": list(dag_ids) if dag_ids is not None else None,
                    },
                )
                letters = [Letter.from_row(row) for row in ProviderDatabase.rows(cur)]
            for letter in letters:
                try:
                    ti = self.api.task_instance(
                        letter.dag_id, letter.run_id, letter.task_id, letter.map_index
                    )
                except AirflowApiError as exc:  # asked again at the next sweep
                    metrics.incr("sweeper", "error")
                    log.warning(
                        "airflow-retry-provider: letter %s not checked: %s", letter.id, redact(str(exc))[:500]
                    )
                    continue
                if ti.state == "success" and self.store.resolve_succeeded(letter.id, ti.try_number):
                    resolved.append(letter.id)
            if len(letters) < limit:
                break
        return sorted(resolved)


def _new_report() -> dict[str, list[Any]]:
    return {name: [] for name in ("resolved", "refiled", "released", "waiting", "errors")}


def _sync_report(report: dict[str, list[Any]]) -> SyncReport:
    return SyncReport(
        tuple(report["resolved"]),
        tuple(report["refiled"]),
        tuple(report["waiting"]),
        tuple(report["errors"]),
        tuple(report["released"]),
    )


def cleared_by(note: str | None, replay_id: int) -> bool:
    """Whether a task instance's note is the one this replay's clear left (``replay_note``): then it was cleared."""
    return note is not None and note.startswith(f"airflow-retry replay #{replay_id} ")


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
