"""The sweep before issue 46, one REST call per open letter: the reference the batched sweep
(``dlq/sweeper.py`` ``sweep_in_batches``) is tested against and the benchmark's anchor (bench/sweep.py).

No sweep of the provider runs it: it lives with the tests. The same decisions as the live path
(``OutcomeSync._sync_one``, ``_decide``, ``sweeper._sweep_logged``), read one by one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote

from airflow_retry_provider import metrics
from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.dlq.decide import FoundInstance, SweepStep, sweep_step
from airflow_retry_provider.dlq.models import Letter, SyncReport
from airflow_retry_provider.dlq.sweeper import DEFAULT_LOOKBACK, SweepReport, _sweep_logged
from airflow_retry_provider.dlq.sync import SYNC_GRACE, OutcomeSync, _Pass
from airflow_retry_provider.hooks.airflow_api import AirflowApi, AirflowApiError, TaskInstanceRef
from airflow_retry_provider.policy import redact
from airflow_retry_provider.sql import parse_named

QUERIES = parse_named((Path(__file__).parent / "one_by_one.sql").read_text())


def failed_task_instances(
    api: AirflowApi, dag_id: str, ended_after: datetime | None = None
) -> Iterator[TaskInstanceRef]:
    """Every failed task instance of ``dag_id`` (all runs), optionally only those ended after a time."""
    params: dict[str, Any] = {"state": "failed", "order_by": "id"}
    if ended_after is not None:
        params["end_date_gte"] = ended_after.isoformat()
    path = f"/api/v2/dags/{quote(dag_id, safe='')}/dagRuns/~/taskInstances"
    return (TaskInstanceRef.from_json(item) for item in api._paged(path, "task_instances", params))


def sweep(
    store: Any,
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
            failed = list(failed_task_instances(api, dag_id, ended_after=now - lookback))
        except AirflowApiError as exc:
            errors.append(f"{dag_id}: {redact(str(exc))}")
            continue
        for ti in failed:
            if (
                sweep_step(FoundInstance("failed", ti.end_date, managed=True), now, grace)
                is not SweepStep.FILE
            ):
                continue
            covered += _sweep_logged(store, api, ti, runs, replay_cap, filed, errors)
    return SweepReport(dags, tuple(filed), covered, tuple(errors))


def sync_outcomes(
    outcomes: OutcomeSync,
    limit: int = 500,
    grace: timedelta = SYNC_GRACE,
    now: datetime | None = None,
    source: str = "sweeper",
    open_claims_only: bool = False,
) -> SyncReport:
    """Decide every letter in ``replaying`` once, one REST call each, ``limit`` at a time.

    ``open_claims_only`` looks only at the claims that need a decision (the driver's pass). Each
    letter looked at is stamped, so letters Airflow leaves undecided rotate behind the others.
    """
    run = _Pass(now or datetime.now(timezone.utc), grace, source)
    since = None
    while True:
        page = outcomes.replays.replaying_page(since, limit, open_claims_only=open_claims_only)
        since, rows = page.since, page.rows
        for row in rows:
            outcomes._sync_one(row, run)
        if len(rows) < limit:
            break
    return run.result()


def resting_letters_due(
    db: ProviderDatabase, since: datetime, limit: int, dag_ids: Sequence[str] | None
) -> list[Letter]:
    """Letters at rest of ``dag_ids`` (None: any) not looked at since ``since``, stamped."""
    params = {"since": since, "limit": limit, "dag_ids": list(dag_ids) if dag_ids is not None else None}
    with db.transaction() as cur:
        cur.execute(QUERIES["resting_letters_due"], params)
        return [Letter.from_row(row) for row in ProviderDatabase.rows(cur)]


def resolve_succeeded_in_dlq(
    outcomes: OutcomeSync, dag_ids: Sequence[str] | None = None, limit: int = 500
) -> list[int]:
    """Resolve letters at rest (``dlq``, ``parked``) whose task instance has since succeeded: one REST
    call per letter, each letter once per call of this, ``limit`` letters at a time."""
    store, api = outcomes.store, outcomes.api
    since = store.database_now()
    resolved = []
    while True:
        letters = resting_letters_due(store.db, since, limit, dag_ids)
        for letter in letters:
            try:
                ti = api.task_instance(letter.dag_id, letter.run_id, letter.task_id, letter.map_index)
            except AirflowApiError:  # asked again at the next sweep
                metrics.incr("sweeper", "error")
                continue
            if ti.state == "success" and store.resolve_succeeded(letter.id, ti.try_number):
                resolved.append(letter.id)
        if len(letters) < limit:
            break
    return sorted(resolved)


def check_one_by_one(
    outcomes: OutcomeSync, managed: Iterable[str], grace: timedelta = SYNC_GRACE
) -> tuple[SweepReport, list[int], SyncReport]:
    """The sweep's reads as they were before issue 46: one REST call per open letter, a DAG's failures
    listed each time. The store, the API and the replay cap are ``outcomes``'s."""
    report = sweep(outcomes.store, outcomes.api, managed, outcomes.replay_cap, grace=grace)
    sync = sync_outcomes(outcomes, grace=grace)
    resolved = resolve_succeeded_in_dlq(outcomes)
    return report, resolved, sync
