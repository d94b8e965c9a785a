"""The sweeper: files the failures no callback could file, syncs replay outcomes, drains replay jobs.

A task is *policy-managed* when its DAG carries the tag ``airflow-retry-provider`` (every task of
such a DAG is swept; the provider's cluster policy adds it to every DAG ``apply_profile``
configures, see ``dlq/managed.py``) or when its DAG id is listed in the Airflow Variable
``airflow_retry_dlq_sweep_dags`` (a JSON list or comma-separated ids). Both are read through
Airflow's REST API (connection ``retry_provider_airflow_api``), never the ORM. For each failed
task instance of those DAGs with no letter at its try, a letter is filed with category
``filed-by-sweeper``; then ``sync_outcomes`` resolves, re-files or releases letters left in
``replaying``, letters in ``dlq`` whose task instance has since succeeded are resolved, and the
replay jobs no driver is working on are driven for up to ``DRAIN_SECONDS``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import Any

from airflow_retry_provider import metrics, settings
from airflow_retry_provider.dlq import announce
from airflow_retry_provider.dlq.driver import ReplayDriver
from airflow_retry_provider.dlq.impact import refresh_impacts
from airflow_retry_provider.dlq.models import (
    MANAGED_TAG,
    SWEEP_VARIABLE,
    NewLetter,
    SyncReport,
    parse_dag_list,
)
from airflow_retry_provider.dlq.replay import ReplayEngine
from airflow_retry_provider.dlq.store import DeadLetterStore
from airflow_retry_provider.dlq.sync import SYNC_GRACE, OutcomeSync
from airflow_retry_provider.hooks.airflow_api import AirflowApi, AirflowApiError, TaskInstanceRef, parse_time
from airflow_retry_provider.identity import make_work_unit_key
from airflow_retry_provider.policy import Classification, fingerprint, redact

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

    def to_json(self) -> dict[str, Any]:
        return {
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
        reason=f"[filed by sweeper] {message}"[:500],
        fingerprint=fingerprint(classification),
        filed_by="sweeper",
        **ti.version_fields(),
    )


def sweep(
    store: DeadLetterStore,
    api: AirflowApi,
    dag_ids: Iterable[str],
    replay_cap: int,
    lookback: timedelta = DEFAULT_LOOKBACK,
    grace: timedelta = SYNC_GRACE,
    now: datetime | None = None,
) -> SweepReport:
    """File every failed task instance of ``dag_ids`` (ended within ``lookback``) that has no letter.

    Failures that ended less than ``grace`` ago are left to their own callback for now.
    """
    now = now or datetime.now(timezone.utc)
    dags = tuple(dag_ids)
    filed: list[int] = []
    covered = 0
    errors: list[str] = []
    runs: dict[tuple[str, str], dict[str, Any]] = {}
    for dag_id in dags:
        try:
            failed = list(api.failed_task_instances(dag_id, ended_after=now - lookback))
        except AirflowApiError as exc:
            errors.append(f"{dag_id}: {redact(str(exc))}")
            continue
        for ti in failed:
            if ti.end_date is not None and now - ti.end_date < grace:
                continue
            try:
                outcome = _sweep_one(store, api, ti, runs, replay_cap)
            except Exception as exc:  # one bad task instance is logged and counted; the sweep goes on
                metrics.incr("sweeper", "error")
                errors.append(
                    f"{ti.dag_id}/{ti.run_id}/{ti.task_id}[{ti.map_index}]: {type(exc).__name__}: {redact(str(exc))}"
                )
                log.warning("airflow-retry-provider: sweeper skipped a task instance: %s", errors[-1])
                continue
            if outcome is None:
                covered += 1
            elif outcome:
                filed.append(outcome)
    return SweepReport(dags, tuple(filed), covered, tuple(errors))


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
    letter = sweeper_letter(ti, runs[key])
    result = store.file(letter, replay_cap)
    if not result.changed:
        return 0
    announce.filed(store.db, letter, result)
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


def number_versions(store: DeadLetterStore, api: AirflowApi) -> tuple[int, list[str]]:
    """Look up the number of each DAG version letters name only by UUID (filed by a worker).

    One ``dagVersions`` call per DAG. A version Airflow no longer has (its DAG deleted, or the
    version gone with it) keeps no number: the letter says "number unknown", never a guess.
    Returns how many letters got a number, and the errors (the sweep goes on).
    """
    numbered, errors = 0, []
    wanted: dict[str, set[str]] = {}
    for dag_id, version_id in store.unnumbered_versions():
        wanted.setdefault(dag_id, set()).add(version_id)
    for dag_id, ids in wanted.items():
        try:
            versions = api.dag_versions(dag_id)
        except AirflowApiError as exc:
            if exc.status_code != 404:  # 404: the DAG is gone from Airflow, its versions with it
                errors.append(f"{dag_id}: DAG versions: {redact(str(exc))}")
            continue
        for version in versions:
            if version.id in ids:
                numbered += store.number_version(
                    dag_id, version.id, version.version_number, version.bundle_name, version.bundle_version
                )
    return numbered, errors


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
        store.record_dag_version(
            dag_id,
            newest.version_number,
            newest.id,
            newest.bundle_name,
            newest.bundle_version,
            newest.created_at,
        )
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
                announce.fix_deployed,
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


def run_sweeper(
    store: DeadLetterStore | None = None,
    api: AirflowApi | None = None,
    lookback: timedelta = DEFAULT_LOOKBACK,
    grace: timedelta | None = None,
    drain_seconds: float = DRAIN_SECONDS,
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
    with api:
        with store.db.pinned() as db:  # one database connection for the sweep and the sync
            pinned = DeadLetterStore(db)
            outcomes = OutcomeSync(pinned, api, replay_cap=cap)
            report = sweep(pinned, api, managed_dag_ids(api), cap, lookback=lookback, grace=grace)
            sync = outcomes.sync_outcomes(grace=grace)
            resolved = outcomes.resolve_succeeded_in_dlq()
            numbered, version_errors = number_versions(pinned, api)
            noticed, notice_errors = notice_fixes(pinned, api)
            refresh_impacts(pinned, api, datetime.now(timezone.utc))  # issue 48: logs what it could not
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
    )
    log.info("airflow-retry-provider: sweep %s", json.dumps(report.to_json(), sort_keys=True))
    if report.errors or sync.errors:
        raise RuntimeError(f"sweeper could not check everything: {[*report.errors, *sync.errors]}")
    return report.to_json()
