"""The sweeper: files the failures no callback could file, syncs replay outcomes, drains replay jobs.

A task is *policy-managed* when its DAG carries the tag ``airflow-retry-provider`` (every task of
such a DAG is swept; the provider's cluster policy adds it to every DAG ``apply_profile``
configures, see ``dlq/managed.py``) or when its DAG id is listed in the Airflow Variable
``airflow_retry_dlq_sweep_dags`` (a JSON list or comma-separated ids). Both are read through
Airflow's REST API (connection ``retry_provider_airflow_api``), never the ORM. For each failed
task instance of those DAGs with no letter at its try, a letter is filed with category
``filed-by-sweeper``; letters left in ``replaying`` are resolved, re-filed or released; letters
in ``dlq`` or ``parked`` whose task instance has since succeeded are resolved; and the replay jobs
no driver is working on are driven for up to ``DRAIN_SECONDS``.

Airflow is read in batches (``sweep_in_batches``, issue 46), so a sweep's cost follows what
changed, not the backlog: what ended since a watermark kept in PostgreSQL, the replaying letters
100 a page, and a full pass over the letters at rest spread over sweeps, at most
``[retry_provider] sweep_max_pages`` pages. The sweep before it (one call per open letter),
the reference the batched one is tested and benchmarked against, is ``tests/one_by_one.py``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import Any

from airflow_retry_provider import announce, metrics, settings
from airflow_retry_provider.dlq.announce import FixDeployed, LetterFiled
from airflow_retry_provider.dlq.decide import FoundInstance, SweepStep, resolves_at_rest, sweep_step
from airflow_retry_provider.dlq.deliveries import watch_deliveries, watch_outages
from airflow_retry_provider.dlq.driver import ReplayDriver
from airflow_retry_provider.dlq.impact import (
    SWEEPER_HANDOVER_SECONDS,
    ReadCache,
    compute_pending,
    refresh_impacts,
)
from airflow_retry_provider.dlq.infra import EndedTry, file_infra, recognise
from airflow_retry_provider.dlq.models import (
    MANAGED_TAG,
    SWEEP_VARIABLE,
    Letter,
    NewLetter,
    SweepState,
    SyncReport,
    json_of,
    parse_dag_list,
)
from airflow_retry_provider.dlq.replay import ReplayEngine, number_versions  # the sweep numbers versions too
from airflow_retry_provider.dlq.store import DeadLetterStore
from airflow_retry_provider.dlq.sync import SYNC_GRACE, Key, OutcomeSync, PageBudget, letter_key, ti_key
from airflow_retry_provider.hooks.airflow_api import (
    PAGE_SIZE,
    AirflowApi,
    AirflowApiError,
    TaskInstanceRef,
    parse_time,
)
from airflow_retry_provider.identity import make_work_unit_key
from airflow_retry_provider.policy import Classification, fingerprint, redact
from airflow_retry_provider.policy.decide import letter_reason
from airflow_retry_provider.policy.infra import InfraClassification

log = logging.getLogger(__name__)

DEFAULT_LOOKBACK = timedelta(days=7)
SWEEPER_CATEGORY = "filed-by-sweeper"
SWEEPER_MESSAGE = "the task instance failed and no dead letter was filed for it"
DRAIN_SECONDS = 300.0


@dataclass(frozen=True)
class SweepReport:
    """What one sweep did: letters it filed (ids), failures already covered, and errors."""

    dag_ids: tuple[str, ...]
    filed: tuple[int, ...]
    covered: int
    errors: tuple[str, ...]
    sync: SyncReport | None = None
    resolved_in_dlq: tuple[int, ...] = ()
    jobs_driven: tuple[int, ...] = ()
    versions_numbered: int = 0
    fixes_noticed: tuple[int, ...] = ()
    behind: Backlog | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "behind": self.behind.to_json() if self.behind else None,
            "dag_ids": list(self.dag_ids),
            "filed": list(self.filed),
            "covered": self.covered,
            "errors": list(self.errors),
            "sync": self.sync.to_json() if self.sync else None,
            "resolved_in_dlq": list(self.resolved_in_dlq),
            "jobs_driven": list(self.jobs_driven),
            "versions_numbered": self.versions_numbered,
            "fixes_noticed": list(self.fixes_noticed),
        }


@dataclass(frozen=True)
class Backlog:
    """How far behind a sweep left the sweeper: what the next sweeps still have to read.

    :param pages: pages of Airflow's bulk list this sweep read, of ``max_pages``.
    :param letters_unchecked: letters at rest not yet checked in the current full pass.
    :param oldest_check_age_seconds: how long ago the least recently checked letter at rest was checked.
    :param watermark: how far the stream of ended task instances was read (Airflow's ``end_date``).
    :param caught_up: the stream was read to its end.
    :param pass_complete: this sweep finished a full pass (the next starts another).
    """

    pages: int
    max_pages: int
    letters_unchecked: int
    oldest_check_age_seconds: float
    watermark: datetime | None
    caught_up: bool
    pass_complete: bool

    def to_json(self) -> dict[str, Any]:
        return {**json_of(self), "oldest_check_age_seconds": round(self.oldest_check_age_seconds, 1)}


def managed_dag_ids(api: AirflowApi, extra: Iterable[str] = ()) -> list[str]:
    """DAGs tagged ``airflow-retry-provider`` plus those listed in the Variable and ``extra``."""
    listed = parse_dag_list(api.variable(SWEEP_VARIABLE))
    return sorted({*api.dag_ids_tagged(MANAGED_TAG), *listed, *extra})


def sweeper_letter(ti: TaskInstanceRef, dag_run: dict[str, Any]) -> NewLetter:
    """The letter the sweeper files for a failed task instance it found without one."""
    note = f"; note: {ti.note}" if ti.note else ""
    message = redact(f"{SWEEPER_MESSAGE} (state {ti.state}, try {ti.try_number}){note}", 2000)
    classification = Classification("unknown", SWEEPER_CATEGORY, "sweeper", "TaskFailed", SWEEPER_MESSAGE)
    start, end = parse_time(dag_run.get("data_interval_start")), parse_time(dag_run.get("data_interval_end"))
    return NewLetter(
        dag_id=ti.dag_id,
        run_id=ti.run_id,
        task_id=ti.task_id,
        map_index=ti.map_index,
        try_number=ti.try_number,
        attempts_used=ti.try_number,
        max_attempts=ti.max_tries + 1 if ti.max_tries else None,
        work_unit_key=make_work_unit_key(ti.dag_id, ti.task_id, ti.map_index, start, end, ti.run_id),
        data_interval_start=start,
        data_interval_end=end,
        workspace_id=None,
        failure_class="unknown",
        category=SWEEPER_CATEGORY,
        rule="sweeper",
        exception_type="TaskFailed",
        message=message,
        reason=letter_reason(message, attempt=None, max_attempts=None)[:500],
        fingerprint=fingerprint(classification),
        filed_by="sweeper",
        **ti.version_fields(),
    )


def _sweep_logged(
    store: DeadLetterStore,
    api: AirflowApi,
    ti: TaskInstanceRef,
    runs: dict[tuple[str, str], dict[str, Any]],
    replay_cap: int,
    filed: list[int],
    errors: list[str],
) -> int:
    """:func:`_sweep_one`: a letter filed is added to ``filed``; 1 when a letter already covered the task
    instance, else 0. An error is logged, counted and added to ``errors`` (the sweep goes on)."""
    try:
        outcome = _sweep_one(store, api, ti, runs, replay_cap)
        if outcome:
            filed.append(outcome)
        return 1 if outcome is None else 0
    except Exception as exc:  # one bad task instance is logged and counted; the sweep goes on
        metrics.incr("sweeper", "error")
        errors.append(
            f"{ti.dag_id}/{ti.run_id}/{ti.task_id}[{ti.map_index}]: {type(exc).__name__}: {redact(str(exc))}"
        )
        log.warning("airflow-retry-provider: sweeper skipped a task instance: %s", errors[-1])
        return 0


def _sweep_one(
    store: DeadLetterStore,
    api: AirflowApi,
    ti: TaskInstanceRef,
    runs: dict[tuple[str, str], dict[str, Any]],
    replay_cap: int,
) -> int | None:
    """File one failed task instance if no letter covers it: the new letter's id, None if covered, 0 if unchanged."""
    if store.has_letter(ti.dag_id, ti.run_id, ti.task_id, ti.map_index, ti.try_number):
        return None
    key = (ti.dag_id, ti.run_id)
    if key not in runs:
        try:
            runs[key] = api.dag_run(ti.dag_id, ti.run_id)
        except AirflowApiError as exc:
            if exc.status_code != 404:
                raise
            runs[key] = {}  # the run was deleted since it was listed: file the letter without its interval
    found = _recognised(api, ti)
    if found is not None:  # issue 57: the same evidence and filing as the infra watcher's
        ended, classification = found
        return file_infra(store, ended, classification, runs[key], replay_cap, filed_by="sweeper").letter_id
    letter = sweeper_letter(ti, runs[key])
    result = store.file(letter, replay_cap)
    if not result.changed:
        return 0
    announce.tell(LetterFiled(store.db, letter, result))
    log.warning(
        "airflow-retry-provider: sweeper filed dead letter %s for %s/%s/%s[%s] try %s (%s)",
        result.letter_id,
        ti.dag_id,
        ti.run_id,
        ti.task_id,
        ti.map_index,
        ti.try_number,
        result.status,
    )
    return result.letter_id


def _recognised(api: AirflowApi, ti: TaskInstanceRef) -> tuple[EndedTry, InfraClassification] | None:
    """The failed try of ``ti`` as an infrastructure failure, when Airflow's evidence shows one (issue 57)."""
    ended = EndedTry(
        dag_id=ti.dag_id,
        run_id=ti.run_id,
        task_id=ti.task_id,
        map_index=ti.map_index,
        try_number=ti.try_number,
        state=ti.state or "failed",
        hostname=None,
        end_date=ti.end_date,
        final=True,
        max_tries=ti.max_tries,
        note=ti.note,
        version=ti.version_fields(),
    )
    try:
        hosts = [
            item.get("hostname")
            for item in api.tries(ti.dag_id, ti.run_id, ti.task_id, ti.map_index)
            if item.get("try_number") == ti.try_number
        ]
        ended = replace(ended, hostname=hosts[-1] if hosts and hosts[-1] else None)
        found = recognise(api, ended)
    except (
        AirflowApiError
    ) as exc:  # the evidence cannot be read now: filed as before, the watcher may reclassify
        log.info("airflow-retry-provider: sweeper could not read the evidence of %s: %s", ti.task_id, exc)
        return None
    return (ended, found) if found is not None else None


def read_changes(
    store: DeadLetterStore,
    api: AirflowApi,
    managed: Iterable[str],
    budget: PageBudget,
    replay_cap: int,
    lookback: timedelta = DEFAULT_LOOKBACK,
    grace: timedelta = SYNC_GRACE,
    overlap: timedelta = timedelta(hours=1),
    now: datetime | None = None,
) -> tuple[SweepReport, list[int], SweepState]:
    """Read what ended in Airflow since the watermark, in pages: file failures with no letter, resolve letters at rest that succeeded.

    The stream is every ``failed`` or ``success`` task instance of the managed DAGs and of the DAGs
    with open letters, ordered by ``end_date`` from the kept watermark (Airflow's clock). A read that
    caught up last time starts ``overlap`` (at least ``grace``) earlier: rows read twice are decided
    once (filing and resolving are idempotent), and a host whose clock lags Airflow's by less than
    ``overlap`` loses nothing. Without a watermark (a first sweep, or a lost one) it starts
    ``lookback`` ago, as the one-by-one sweep did. The watermark is saved after each page, so a 429
    or a 5xx (raised) or the budget stops the read where it is and the next sweep continues it.
    Replaying letters are left to ``OutcomeSync.sync_replaying_batched``.
    """
    now = now or datetime.now(timezone.utc)
    managed_ids = frozenset(managed)
    dags = sorted({*managed_ids, *store.open_letter_dags()})
    state = store.sweep_state()
    if state.watermark is None:
        cursor, skip = now - lookback, 0
    elif state.caught_up:
        cursor, skip = state.watermark - max(overlap, grace), 0
    else:
        cursor, skip = state.watermark, state.watermark_skip
    filed: list[int] = []
    resolved: list[int] = []
    covered = 0
    errors: list[str] = []
    runs: dict[tuple[str, str], dict[str, Any]] = {}
    caught_up = not dags
    while dags and budget.spend():
        items, _ = api.task_instances_batch(
            dag_ids=dags,
            states=("failed", "success"),
            ended_from=cursor,
            order_by="end_date",
            offset=skip,
            limit=PAGE_SIZE,
        )
        letters: dict[Key, list[Letter]] = {}
        for letter in store.open_letters_of(sorted({ti_key(ti) for ti in items})):
            letters.setdefault(letter_key(letter), []).append(letter)
        for ti in items:
            step = sweep_step(
                FoundInstance(ti.state or "", ti.end_date, ti.dag_id in managed_ids), now, grace
            )
            if step is SweepStep.RESOLVE_AT_REST:
                for letter in letters.get(ti_key(ti), []):
                    if resolves_at_rest(letter.status) and store.resolve_succeeded(letter.id, ti.try_number):
                        resolved.append(letter.id)
                continue
            if step is SweepStep.LEAVE:
                continue
            covered += _sweep_logged(store, api, ti, runs, replay_cap, filed, errors)
        cursor, skip = advance(
            cursor, skip, [ti.end_date for ti in items if ti.end_date is not None], len(items)
        )
        caught_up = len(items) < PAGE_SIZE
        saved = watermark_after(state, cursor, skip, caught_up, now - overlap)
        store.save_sweep_state(saved)
        if caught_up:
            break
    state = watermark_after(state, cursor, skip, caught_up, now - overlap) if dags else state
    report = SweepReport(tuple(sorted(managed_ids)), tuple(filed), covered, tuple(errors))
    return report, sorted(resolved), state


def advance(cursor: datetime, skip: int, marks: Sequence[datetime], read: int) -> tuple[datetime, int]:
    """Where a read of pages ordered by a time (``end_date``, ``start_date``) goes on after a page of
    ``read`` rows whose times are ``marks``: from the page's newest time, past the rows at exactly it;
    or, a whole page at one instant (or none), further along the same instant."""
    if marks and max(marks) > cursor:
        newest = max(marks)
        return newest, sum(1 for mark in marks if mark == newest)
    return cursor, skip + read


def watermark_after(
    state: SweepState, cursor: datetime, skip: int, caught_up: bool, settled: datetime
) -> SweepState:
    """The watermark a read leaves: where it stopped; once caught up, never behind where it was nor behind ``settled``.

    A read that caught up saw everything Airflow had ended: the watermark moves to the newest
    ``end_date`` read, the one kept before, or ``settled`` (this host's now minus the overlap: a
    task ending later, on an Airflow clock lagging less than the overlap, still lands after it),
    whichever is latest, so sweeps that find nothing never reread the lookback.
    """
    if not caught_up:
        return replace(state, watermark=cursor, watermark_skip=skip, caught_up=False)
    marks = [(cursor, skip), (settled, 0)]
    if state.watermark is not None:
        marks.append((state.watermark, state.watermark_skip))
    watermark, watermark_skip = max(marks)
    return replace(state, watermark=watermark, watermark_skip=watermark_skip, caught_up=True)


def notice_fixes(store: DeadLetterStore, api: AirflowApi) -> tuple[list[int], list[str]]:
    """Notice the newer versions of DAGs with open letters: one notice (and one ``fix-deployed``
    alert) per DAG version and root-cause group whose letters failed on an older version.

    Nothing is replayed: a replay stays a person's decision. The newest version of each DAG is kept
    for the pages; DAGs and groups with no open letter left are forgotten. Returns the new
    notices' ids and the errors (the sweep goes on).
    """
    notices: list[int] = []
    errors: list[str] = []
    groups: dict[str, list[tuple[str, int, int]]] = {}
    for dag_id, root_cause, failed_on, letters in store.open_groups_by_version():
        groups.setdefault(dag_id, []).append((root_cause, failed_on, letters))
    for dag_id, of_dag in groups.items():
        try:
            versions = api.dag_versions(dag_id)
        except AirflowApiError as exc:
            if exc.status_code != 404:  # 404: the DAG is gone, no version of it can fix anything
                errors.append(f"{dag_id}: DAG versions: {redact(str(exc))}")
            continue
        if not versions:
            continue
        newest = max(versions, key=lambda version: version.version_number)
        store.record_dag_version(newest)
        for root_cause, failed_on, letters in of_dag:
            if newest.version_number <= failed_on:
                continue
            notice = store.notice_fix(
                dag_id,
                root_cause,
                newest.version_number,
                failed_on,
                letters,
                newest.created_at,
                lambda cur, notice, db: announce.tell(FixDeployed(db, cur, notice)),
            )
            if notice is not None:
                notices.append(notice.id)
                log.warning(
                    "airflow-retry-provider: %s letter(s) of %s (root cause %s) %s: a replay may fix them",
                    letters,
                    dag_id,
                    root_cause[:12],
                    notice.line(),
                )
    store.forget_closed_versions()
    return notices, errors


def sweep_in_batches(
    store: DeadLetterStore,
    api: AirflowApi,
    outcomes: OutcomeSync,
    managed: Iterable[str],
    replay_cap: int,
    lookback: timedelta,
    grace: timedelta,
    max_pages: int,
) -> tuple[SweepReport, list[int], SyncReport, Backlog]:
    """One sweep's reads of Airflow, at most ``max_pages`` pages of its bulk list, in this order.

    1. What ended since the watermark (``read_changes``): failures with no letter filed, letters at
       rest whose task instance succeeded resolved; a tenth of the pages is kept for step 3.
    2. Every letter in ``replaying``, in batches (``sync_replaying_batched``): time decides some of
       them (leases, the replay timeout), so they are read each sweep.
    3. The full pass over the letters at rest, oldest check first, with the pages left: what the
       watermark missed (lost, or a clock lagging more than the overlap) is found within a pass.

    A 429 or a 5xx stops the sweep's reads (an error in its report); the watermark and the pass
    keep their place and the next sweep continues.
    """
    budget = PageBudget(max_pages)
    budget.keep(max(1, max_pages // 10))
    resolved: list[int] = []
    stopped: list[str] = []
    state = store.sweep_state()
    try:
        report, resolved, state = read_changes(
            store,
            api,
            managed,
            budget,
            replay_cap,
            lookback=lookback,
            grace=grace,
            overlap=settings.sweep_watermark_overlap_seconds(),
        )
    except AirflowApiError as exc:  # the watermark stays where the last page left it
        metrics.incr("sweeper", "error")
        stopped.append(f"ended task instances: {redact(str(exc))}")
        report = SweepReport(tuple(managed), (), 0, ())
        state = store.sweep_state()
    sync = outcomes.sync_replaying_batched(budget, grace=grace) if not stopped else SyncReport(errors=())
    budget.keep(0)
    pass_started = state.pass_started_at or store.database_now()
    complete = False
    if not stopped and not sync.errors:
        checked, complete, error = outcomes.check_resting_batched(budget, pass_started)
        resolved.extend(checked)
        stopped.extend([error] if error else [])
    state = store.sweep_state()
    store.save_sweep_state(replace(state, pass_started_at=store.database_now() if complete else pass_started))
    unchecked, oldest = store.sweep_backlog(pass_started)
    age = (store.database_now() - oldest).total_seconds() if oldest is not None else 0.0
    behind = Backlog(budget.used, max_pages, unchecked, age, state.watermark, state.caught_up, complete)
    metrics.gauge("sweeper", "pages", value=budget.used)
    metrics.gauge("sweeper", "letters_unchecked", value=unchecked)
    metrics.gauge("sweeper", "oldest_check_age_seconds", value=age)
    report = replace(report, errors=(*report.errors, *stopped))
    return report, sorted(set(resolved)), sync, behind


def run_sweeper(
    store: DeadLetterStore | None = None,
    api: AirflowApi | None = None,
    lookback: timedelta = DEFAULT_LOOKBACK,
    grace: timedelta | None = None,
    drain_seconds: float = DRAIN_SECONDS,
    max_pages: int | None = None,
) -> dict[str, Any]:
    """The sweeper DAG's task: sweep the policy-managed DAGs, sync replay outcomes, drain replay jobs.

    Without ``store``/``api`` it uses the connections ``retry_provider_default`` and
    ``retry_provider_airflow_api``. Without the API connection the task fails at once (no retry):
    an unconfigured sweeper must not look green, since failures may be waiting for it.
    """
    from airflow.sdk.exceptions import AirflowFailException, AirflowNotFoundException

    from airflow_retry_provider.hooks.airflow_api import API_CONN_ID, credentials_from_airflow

    if api is None:
        try:
            credentials = credentials_from_airflow()
        except AirflowNotFoundException:
            raise AirflowFailException(
                f"sweeper not configured: define the Airflow connection {API_CONN_ID} "
                "(e.g. AIRFLOW_CONN_RETRY_PROVIDER_AIRFLOW_API=http://user:password@api-server:8080)"
            ) from None
        api = AirflowApi(credentials)
    store = store or DeadLetterStore.from_conn_id()
    cap = settings.replay_max_attempts()
    grace = grace if grace is not None else settings.sweep_grace_seconds()
    max_pages = max_pages if max_pages is not None else settings.sweep_max_pages()
    with api:
        with store.db.reusing() as db:  # one database connection for the sweep and the sync
            shared = DeadLetterStore(db)
            outcomes = OutcomeSync(shared, api, replay_cap=cap)
            report, resolved, sync, behind = sweep_in_batches(
                shared, api, outcomes, managed_dag_ids(api), cap, lookback, grace, max_pages
            )
            numbered, version_errors = number_versions(shared, api)
            noticed, notice_errors = notice_fixes(shared, api)
            # issue 58: letters awaiting their impact that no api-server computed (grouped by DAG run)
            compute_pending(
                shared, api, datetime.now(timezone.utc), ReadCache(), min_age_seconds=SWEEPER_HANDOVER_SECONDS
            )
            refresh_impacts(shared, api, datetime.now(timezone.utc))  # issue 48: logs what it could not
            watch_deliveries(shared, datetime.now(timezone.utc))  # lost before the deadline, saved once
            watch_outages(
                shared, api, datetime.now(timezone.utc)
            )  # what open breakers' held tasks put at risk
        # then the jobs no other driver works on; the driver takes a connection per claim
        driver = ReplayDriver(ReplayEngine(store, api, replay_cap=cap), lambda: api, close_api=False)
        driven = driver.drain(deadline=time.monotonic() + drain_seconds)
    report = replace(
        report,
        sync=sync,
        resolved_in_dlq=tuple(resolved),
        jobs_driven=tuple(driven),
        versions_numbered=numbered,
        fixes_noticed=tuple(noticed),
        errors=(*report.errors, *version_errors, *notice_errors),
        behind=behind,
    )
    log.info("airflow-retry-provider: sweep %s", json.dumps(report.to_json(), sort_keys=True))
    if report.errors or sync.errors:
        raise RuntimeError(f"sweeper could not check everything: {[*report.errors, *sync.errors]}")
    return report.to_json()
