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
resolved. The sweeper and the driver read Airflow in batches (``sync_replaying_batched``,
``check_resting_batched``: up to 100 letters of a DAG per call of Airflow's bulk list, within a
:class:`PageBudget`); the driver's canary one letter at a time (``sync_letter``); all with the
same decisions (``_decide``).
The state tables are in ``dlq/states.py`` (and docs/ARCHITECTURE.md).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from airflow_retry_provider import announce, metrics, settings
from airflow_retry_provider.dlq.announce import LetterFiled, LetterParked
from airflow_retry_provider.dlq.decide import OpenClaim, ReplayingLetter, Step, replaying_step
from airflow_retry_provider.dlq.models import Letter, NewLetter, SyncReport
from airflow_retry_provider.dlq.store import DeadLetterStore, ReplayStore
from airflow_retry_provider.hooks.airflow_api import PAGE_SIZE, AirflowApi, AirflowApiError, TaskInstanceRef
from airflow_retry_provider.policy import redact
from airflow_retry_provider.states import LetterStatus

log = logging.getLogger(__name__)

SYNC_GRACE = timedelta(minutes=2)


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
        self.replays = ReplayStore(store.db)
        self.api = api
        self.replay_cap = replay_cap if replay_cap is not None else settings.replay_max_attempts()
        self.replay_timeout = (
            replay_timeout
            if replay_timeout is not None
            else timedelta(seconds=settings.replay_timeout_seconds())
        )

    def sync_letter(self, letter_id: int, source: str = "driver") -> SyncReport:
        """Decide one letter in ``replaying`` (the canary a driver waits for), now.

        One REST call, about that letter's task instance; none when the letter is not replaying (its
        callback decided it already) or another process is deciding it right now.
        """
        run = _Pass(datetime.now(timezone.utc), SYNC_GRACE, source)
        for row in self.replays.replaying_page(None, 1, letter_id=letter_id).rows:
            self._sync_one(row, run)
        return run.result()

    def _sync_one(self, row: Mapping[str, Any], run: _Pass) -> None:
        """Decide one replaying letter from its task instance, asked of Airflow on its own."""
        letter = Letter.from_row(row)
        try:
            ti = self.api.task_instance(letter.dag_id, letter.run_id, letter.task_id, letter.map_index)
        except AirflowApiError as exc:
            if exc.status_code == 404:  # the task instance or its run was deleted: parked once
                self._park_vanished(letter)
                return
            metrics.incr("sweeper", "error")
            run.report["errors"].append(f"letter {letter.id}: {redact(str(exc))}")
            return
        self._decide(row, letter, ti, run)

    def sync_replaying_batched(
        self,
        budget: PageBudget,
        grace: timedelta = SYNC_GRACE,
        now: datetime | None = None,
        source: str = "sweeper",
        limit: int = 500,
        open_claims_only: bool = False,
    ) -> SyncReport:
        """Decide letters in ``replaying`` once each, reading Airflow in batches: one page per
        ``PAGE_SIZE`` letters of a DAG.

        Success resolves; a newer failed try (ended at least ``grace`` ago, else its own callback
        files it) files the letter again; a clear that happened whose task instance ended without
        succeeding is a failed replay; a claim not confirmed cleared whose lease expired, or whose
        clear's answer was lost, goes back to ``dlq`` (``abandoned``); a letter Airflow's answer does
        not name is gone, as a 404 says. Each letter looked at is stamped, so letters Airflow leaves
        undecided rotate behind the others. At most the pages ``budget`` allows. at most the pages ``budget`` allows. A 429 or 5xx stops the pass (an
        error in the report); the letters not reached are decided at the next sweep.
        ``open_claims_only``: the driver's pass over the claims that need a decision.
        """
        run = _Pass(now or datetime.now(timezone.utc), grace, source)
        since = None
        while budget.left() > 0:
            size = min(limit, budget.left() * PAGE_SIZE)
            page = self.replays.replaying_page(since, size, open_claims_only=open_claims_only)
            since, rows = page.since, page.rows
            by_letter = {int(row["id"]): row for row in rows}
            letters = [Letter.from_row(row) for row in rows]
            try:
                for chunk, found in read_in_batches(self.api, letters, budget):
                    for letter in chunk:
                        ti = found.get(letter_key(letter))
                        if ti is None:  # Airflow has no such task instance (any more): as a 404
                            self._park_vanished(letter)
                            continue
                        self._decide(by_letter[letter.id], letter, ti, run)
            except AirflowApiError as exc:
                metrics.incr("sweeper", "error")
                run.report["errors"].append(f"replaying letters: {redact(str(exc))}")
                break
            if len(rows) < size:
                break
        return run.result()

    def _decide(self, row: Mapping[str, Any], letter: Letter, ti: TaskInstanceRef, run: _Pass) -> None:
        """Decide one replaying letter from its task instance as Airflow reports it (read one by one or in a
        batch), and carry out what :func:`~airflow_retry_provider.dlq.decide.replaying_step` decided,
        through the store."""
        claim = OpenClaim.from_row(row)
        seen = ReplayingLetter(letter.try_number, ti, claim, run.now, run.grace, self.replay_timeout)
        action, replay_id = replaying_step(seen), claim.replay_id if claim else None
        source, report = run.source, run.report
        if action.step is Step.RESOLVE:
            if self.store.resolve_replaying(
                letter.dag_id, letter.run_id, letter.task_id, letter.map_index, source=source
            ):
                report["resolved"].append(letter.id)
        elif action.step is Step.REFILE:
            again = refiled_letter(letter, ti)
            result = self.store.file(again, self.replay_cap)
            if result.changed:
                report["refiled"].append(letter.id)
                announce.tell(LetterFiled(self.store.db, again, result))
        elif action.step is Step.RELEASE_UNCLAIMED:
            if self.store.release_unclaimed(letter.id):
                report["released"].append(letter.id)
        elif action.step is Step.ABANDON:
            assert replay_id is not None
            if self.replays.abandon(letter, replay_id, action.detail, lost=action.lost, source=source):
                metrics.incr("replay", "abandoned")
                report["released"].append(letter.id)
        elif action.step is Step.END_REPLAY:
            assert replay_id is not None
            status = self.store.end_replay(letter.id, replay_id, action.detail, self.replay_cap, source)
            if status is not None:
                report["refiled"].append(letter.id)
                if status == LetterStatus.PARKED:
                    announce.tell(LetterParked(self.store.db, letter, action.detail))
        else:  # WAIT, or MARK_UNKNOWN and wait
            if action.step is Step.MARK_UNKNOWN:
                assert replay_id is not None
                self.store.mark_replay_unknown(replay_id, action.detail)
            report["waiting"].append(letter.id)

    def _park_vanished(self, letter: Letter) -> None:
        """Park a replaying letter whose task instance Airflow no longer has, and announce it (once)."""
        reason = "the task instance or its DAG run no longer exists in Airflow (404); parked by the sweeper"
        if self.store.park_vanished(letter.id, reason):
            log.warning("airflow-retry-provider: letter %s parked: %s", letter.id, reason)
            announce.tell(LetterParked(self.store.db, letter, reason))

    def check_resting_batched(
        self, budget: PageBudget, since: datetime
    ) -> tuple[list[int], bool, str | None]:
        """The full pass, in batches: letters at rest not checked since ``since`` whose task instance succeeded are resolved.

        One page of Airflow's answer covers up to ``PAGE_SIZE`` letters of a DAG (only succeeded task
        instances are asked for). A letter is stamped once Airflow answered for it, so a pass stopped
        by the budget or by a 429 or a 5xx resumes with the letters not reached. Returns the letters
        resolved, whether the pass is complete (no letter left unchecked since ``since``) and the
        error that stopped it, if one did.
        """
        resolved: list[int] = []
        while budget.left() > 0:
            letters = self.store.resting_letters_not_checked_since(
                since, min(1000, budget.left() * PAGE_SIZE)
            )
            if not letters:
                return sorted(resolved), True, None
            try:
                for chunk, found in read_in_batches(self.api, letters, budget, states=("success",)):
                    for letter in chunk:
                        ti = found.get(letter_key(letter))
                        if (
                            ti is not None
                            and ti.state == "success"
                            and self.store.resolve_succeeded(letter.id, ti.try_number)
                        ):
                            resolved.append(letter.id)
                    self.store.stamp_checked([letter.id for letter in chunk])
            except AirflowApiError as exc:  # the letters not stamped are the next sweep's first
                metrics.incr("sweeper", "error")
                return sorted(resolved), False, f"letters at rest: {redact(str(exc))}"
        return sorted(resolved), False, None


def settle_claims(store: DeadLetterStore, api: AirflowApi, replay_cap: int, pages: int) -> SyncReport:
    """A driver's pass: decide the claims whose lease expired or whose clear's answer was lost, in batches
    (one call per 100 claims of a DAG, never one per claim: issue 46), at most ``pages`` pages."""
    sync = OutcomeSync(store, api, replay_cap=replay_cap)
    return sync.sync_replaying_batched(PageBudget(pages), source="driver", open_claims_only=True)


class PageBudget:
    """The pages of Airflow's bulk list one sweep may read (``[retry_provider] sweep_max_pages``).

    :param pages: pages in all.
    """

    def __init__(self, pages: int) -> None:
        self.pages = pages
        self.used = 0
        self._keep = 0

    def left(self) -> int:
        """Pages still allowed to the part of the sweep reading now."""
        return max(0, self.pages - self._keep - self.used)

    def keep(self, pages: int) -> None:
        """Hold back ``pages`` for a later part of the sweep (0 releases them)."""
        self._keep = pages

    def spend(self) -> bool:
        """Take one page: False when none is left."""
        if self.left() <= 0:
            return False
        self.used += 1
        return True


Key = tuple[str, str, str, int]


def letter_key(letter: Letter) -> Key:
    return (letter.dag_id, letter.run_id, letter.task_id, letter.map_index)


def ti_key(ti: TaskInstanceRef) -> Key:
    return (ti.dag_id, ti.run_id, ti.task_id, ti.map_index)


def read_in_batches(
    api: AirflowApi,
    letters: Sequence[Letter],
    budget: PageBudget,
    states: Sequence[str] | None = None,
) -> Iterator[tuple[list[Letter], dict[Key, TaskInstanceRef]]]:
    """The task instances of ``letters``, ``PAGE_SIZE`` letters of one DAG per request, each chunk once read whole.

    A request asks for the chunk's runs x tasks (the bulk list filters each list with ``IN``), so
    rows of other task instances of those runs may come back: only the letters' own are kept (a
    DAG's letters are taken by task, then run, so a chunk names few tasks). A
    chunk is yielded only when every page of it was read; the budget running out stops before the
    chunk that would exceed it. Airflow's errors (429, 5xx) are raised.
    """
    by_dag: dict[str, list[Letter]] = {}
    for letter in letters:
        by_dag.setdefault(letter.dag_id, []).append(letter)
    for dag_id, of_dag in by_dag.items():
        of_dag.sort(key=lambda letter: (letter.task_id, letter.run_id, letter.map_index))  # few tasks a chunk
        for start in range(0, len(of_dag), PAGE_SIZE):
            chunk = of_dag[start : start + PAGE_SIZE]
            wanted = {letter_key(letter) for letter in chunk}
            found: dict[Key, TaskInstanceRef] = {}
            offset = 0
            while True:
                if not budget.spend():
                    return
                items, total = api.task_instances_batch(
                    dag_ids=[dag_id],
                    run_ids=sorted({letter.run_id for letter in chunk}),
                    task_ids=sorted({letter.task_id for letter in chunk}),
                    states=states,
                    offset=offset,
                    limit=PAGE_SIZE,
                )
                found.update((ti_key(ti), ti) for ti in items if ti_key(ti) in wanted)
                offset += len(items)
                if len(items) < PAGE_SIZE or offset >= total:
                    break
            yield chunk, found


@dataclass(frozen=True)
class _Pass:
    """One pass of the sync: when it looks, the grace it leaves callbacks, who it says decided, what it did."""

    now: datetime
    grace: timedelta
    source: str
    report: dict[str, list[Any]] = field(
        default_factory=lambda: {
            name: [] for name in ("resolved", "refiled", "released", "waiting", "errors")
        }
    )

    def result(self) -> SyncReport:
        return SyncReport(**{name: tuple(found) for name, found in self.report.items()})


def refiled_letter(letter: Letter, ti: TaskInstanceRef) -> NewLetter:
    """The letter again, at the task instance's newer failed try, as the sweeper saw it."""
    why = f"replay failed at try {ti.try_number} (seen by the sweeper; its callback filed nothing)"
    again = {"try_number": ti.try_number, "reason": why, "filed_by": "sweeper"}
    # the newer try's version, as Airflow reports it
    return NewLetter(**{**letter.as_params(), **again, **ti.version_fields()})
