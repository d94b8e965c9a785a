"""The sweeper: files the failures no callback could file, and syncs replay outcomes.

A task is *policy-managed* when its DAG carries the tag ``airflow-retry-provider`` (every task of
such a DAG is swept) or when its DAG id is listed in the Airflow Variable
``airflow_retry_dlq_sweep_dags`` (a JSON list or comma-separated ids). Both are read through
Airflow's REST API (connection ``retry_provider_airflow_api``), never the ORM. For each failed
task instance of those DAGs with no letter at its try, a letter is filed with category
``filed-by-sweeper``; then ``sync_outcomes`` resolves or re-files letters left in ``replaying``.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from airflow_retry_provider.dlq.airflow_api import AirflowApi, AirflowApiError, TaskInstanceRef, parse_time
from airflow_retry_provider.dlq.models import NewLetter, replay_cap_from_env
from airflow_retry_provider.dlq.replay import SYNC_GRACE, ReplayEngine, SyncReport
from airflow_retry_provider.dlq.store import DeadLetterStore
from airflow_retry_provider.identity import make_work_unit_key
from airflow_retry_provider.policy import Classification, fingerprint, redact

log = logging.getLogger(__name__)

MANAGED_TAG = "airflow-retry-provider"
SWEEP_VARIABLE = "airflow_retry_dlq_sweep_dags"
DEFAULT_LOOKBACK = timedelta(days=7)
SWEEPER_CATEGORY = "filed-by-sweeper"
SWEEPER_MESSAGE = "the task instance failed and no dead letter was filed for it"
GRACE_ENV = "AIRFLOW_RETRY_DLQ_SWEEP_GRACE_SECONDS"


def grace_from_env(environ: Mapping[str, str]) -> timedelta:
    """``AIRFLOW_RETRY_DLQ_SWEEP_GRACE_SECONDS`` (default 120): how long a fresh failure is left to its callback."""
    raw = environ.get(GRACE_ENV)
    if raw is None or raw == "":
        return SYNC_GRACE
    if not raw.isdigit():
        raise ValueError(f"{GRACE_ENV} must be an integer >= 0, got {raw!r}")
    return timedelta(seconds=int(raw))


@dataclass(frozen=True)
class SweepReport:
    """What one sweep did: letters it filed (ids), failures already covered, and errors."""

    dag_ids: tuple[str, ...]
    filed: tuple[int, ...]
    covered: int
    errors: tuple[str, ...]
    sync: SyncReport | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "dag_ids": list(self.dag_ids),
            "filed": list(self.filed),
            "covered": self.covered,
            "errors": list(self.errors),
            "sync": self.sync.to_json() if self.sync else None,
        }


def parse_dag_list(raw: str | None) -> list[str]:
    """The Variable's DAG ids: a JSON list, or comma/whitespace-separated ids."""
    if not raw or not raw.strip():
        return []
    text = raw.strip()
    if text.startswith("["):
        value = json.loads(text)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"{SWEEP_VARIABLE} must be a JSON list of DAG ids")
        return [v.strip() for v in value if v.strip()]
    return [part for part in text.replace(",", " ").split() if part]


def managed_dag_ids(api: AirflowApi, extra: Iterable[str] = ()) -> list[str]:
    """DAGs tagged ``airflow-retry-provider`` plus those listed in the Variable and ``extra``."""
    listed = parse_dag_list(api.variable(SWEEP_VARIABLE))
    return sorted({*api.dag_ids_tagged(MANAGED_TAG), *listed, *extra})


def sweeper_letter(ti: TaskInstanceRef, dag_run: dict[str, Any]) -> NewLetter:
    """The letter the sweeper files for a failed task instance it found without one."""
    note = f"; note: {ti.note}" if ti.note else ""
    message = redact(f"{SWEEPER_MESSAGE} (state {ti.state}, try {ti.try_number}){note}")[:2000]
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
            if store.has_letter(ti.dag_id, ti.run_id, ti.task_id, ti.map_index, ti.try_number):
                covered += 1
                continue
            key = (ti.dag_id, ti.run_id)
            if key not in runs:
                runs[key] = api.dag_run(ti.dag_id, ti.run_id)
            result = store.file(sweeper_letter(ti, runs[key]), replay_cap)
            if result.changed:
                filed.append(result.letter_id)
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
    return SweepReport(dags, tuple(filed), covered, tuple(errors))


def run_sweeper(
    store: DeadLetterStore | None = None,
    api: AirflowApi | None = None,
    lookback: timedelta = DEFAULT_LOOKBACK,
    grace: timedelta | None = None,
) -> dict[str, Any]:
    """The sweeper DAG's task: sweep the policy-managed DAGs, then sync replay outcomes.

    Without ``store``/``api`` it uses the connections ``retry_provider_default`` and
    ``retry_provider_airflow_api``. Without the API connection the task fails at once (no retry):
    an unconfigured sweeper must not look green, since failures may be waiting for it.
    """
    from airflow.sdk.exceptions import AirflowFailException, AirflowNotFoundException

    from airflow_retry_provider.dlq.airflow_api import API_CONN_ID, credentials_from_airflow

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
    cap = replay_cap_from_env(os.environ)
    grace = grace if grace is not None else grace_from_env(os.environ)
    with api:
        report = sweep(store, api, managed_dag_ids(api), cap, lookback=lookback, grace=grace)
        sync = ReplayEngine(store, api, replay_cap=cap).sync_outcomes(grace=grace)
    report = SweepReport(report.dag_ids, report.filed, report.covered, report.errors, sync)
    log.info("airflow-retry-provider: sweep %s", json.dumps(report.to_json(), sort_keys=True))
    if report.errors or sync.errors:
        raise RuntimeError(f"sweeper could not check everything: {[*report.errors, *sync.errors]}")
    return report.to_json()
