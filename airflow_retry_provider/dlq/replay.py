"""The replay engine: select and preview letters, then claim, pace and clear them one at a time.

Replays are only ever started by a person (UI, JSON API, CLI): each becomes a job in
``retry_replay_jobs`` that any process drives (``dlq/driver.py``). For each letter the driver

1. waits for the deployment's pace: at most ``rate_per_minute`` clears in any 60 seconds across
   every job and process, counted in PostgreSQL under an advisory lock (it sleeps before claiming,
   never with a letter claimed);
2. claims the letter (``dlq`` -> ``replaying``, of concurrent claims exactly one wins) with a
   lease, in the same transaction that takes the pace slot;
3. clears its task instance through Airflow's REST API, by default with the instances downstream
   of it in that run that did not succeed, so a working fix finishes the run; letters of those
   downstream instances join the replay;
4. records what Airflow said: ``cleared``; ``clear-failed`` (Airflow refused: the letter goes back
   to ``dlq``); ``unknown`` (the answer was lost: the letter stays ``replaying``).

The task's own callbacks then resolve the letter (success) or file it again (failure: back to
``dlq`` with ``replay_count + 1``, ``parked`` at the cap); ``dlq/sync.py`` decides the rest from
Airflow's state. Every statement is the store's (``dlq/store/``: the claim and the clear's answer
in ``replays.py``; park, dismiss and purge in ``letters.py``). Every change is an event in the
letter's history.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime

from airflow_retry_provider import metrics, settings
from airflow_retry_provider.dlq.models import (
    Claim,
    Letter,
    Preview,
    PreviewItem,
    Refusal,
    ReplayRequest,
    ReplayResult,
    split_replayable,
)
from airflow_retry_provider.dlq.store import DeadLetterStore, LetterFilter, ReplayStore
from airflow_retry_provider.hooks.airflow_api import AirflowApi, AirflowApiError
from airflow_retry_provider.policy import redact
from airflow_retry_provider.states import ItemOutcome

DEFAULT_SELECTION_LIMIT = 1000


def replay_note(replay_id: int, request: ReplayRequest) -> str:
    """The note Airflow shows on the cleared task instance."""
    by = request.who.label()
    note = f"airflow-retry replay #{replay_id} by {by}: {request.reason} (fix {request.fix_version}"
    if request.processing_version:
        note += f", processing version {request.processing_version}"
    return redact(note + ")", 1000)


class ReplayEngine:
    """Replays dead letters through Airflow at the deployment's pace.

    :param store: the dead-letter store.
    :param api: Airflow's REST API (not needed to select or claim; a preview and a job's submitter need it).
    :param replay_cap: replays allowed per letter (default ``[retry_provider] replay_max_attempts``).
    :param rate_per_minute: clears per minute for the whole deployment (default
        ``[retry_provider] replay_rate_per_minute``).
    :param lease_seconds: how long a claim is held before its letter may be taken back
        (default ``[retry_provider] replay_lease_seconds``).
    :param sleep: waits for the pace (the driver's naps); tests pass a recorder that sleeps.
    """

    def __init__(
        self,
        store: DeadLetterStore,
        api: AirflowApi | None = None,
        *,
        replay_cap: int | None = None,
        rate_per_minute: int | None = None,
        lease_seconds: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.store = store
        self.replays = ReplayStore(store.db)
        self.api = api
        self.replay_cap = replay_cap if replay_cap is not None else settings.replay_max_attempts()
        self.rate_per_minute = (
            rate_per_minute if rate_per_minute is not None else settings.replay_rate_per_minute()
        )
        self.lease_seconds = lease_seconds if lease_seconds is not None else settings.replay_lease_seconds()
        if self.replay_cap < 1:
            raise ValueError(f"replay_cap must be >= 1, got {self.replay_cap}")
        if self.rate_per_minute < 1:
            raise ValueError(f"rate_per_minute must be >= 1, got {self.rate_per_minute}")
        if self.lease_seconds < 1:
            raise ValueError(f"lease_seconds must be >= 1, got {self.lease_seconds}")
        self.sleep = sleep

    def require_api(self) -> AirflowApi:
        if self.api is None:
            raise ValueError("this needs Airflow's REST API (connection retry_provider_airflow_api)")
        return self.api

    # -- selection ------------------------------------------------------------------------------

    def select(
        self,
        ids: Sequence[int] | None = None,
        where: LetterFilter | None = None,
        limit: int = DEFAULT_SELECTION_LIMIT,
    ) -> list[Letter]:
        """Letters by ids and/or filter, oldest first (the order a replay works through them)."""
        where = where or LetterFilter()
        if ids:
            where = replace(where, ids=list(ids))
        letters: list[Letter] = []
        before: tuple[datetime, int] | None = None
        while len(letters) < limit:
            page = self.store.list(where, limit=min(500, limit - len(letters)), before=before)
            letters.extend(page)
            if len(page) == 0 or len(letters) >= limit:
                break
            before = (page[-1].created_at, page[-1].id)
        return sorted(letters, key=lambda letter: (letter.created_at, letter.id))

    def split(self, letters: Sequence[Letter]) -> tuple[list[Letter], list[Refusal]]:
        """Replayable letters (``dlq`` under the cap) and refusals for the rest."""
        return split_replayable(letters, self.replay_cap)

    # -- preview --------------------------------------------------------------------------------

    def preview(
        self,
        ids: Sequence[int] | None = None,
        where: LetterFilter | None = None,
        limit: int = DEFAULT_SELECTION_LIMIT,
        downstream: bool = True,
        run_on_latest_version: bool | None = None,
    ) -> Preview:
        """What a replay would touch, with Airflow's clear dry-run (same flags) for each letter. Changes nothing.

        Each item says which DAG version the replay will run: the DAG's latest (from the REST API)
        when ``run_on_latest_version``, else the version the letter failed on.
        """
        ready, refused = self.split(self.select(ids, where, limit))
        api = self.require_api() if ready else None
        if api is not None:
            # filed by a worker, no sweep since: number its version now, as the sweeper would, so the
            # preview says "v3" for a version Airflow still has (errors leave "number unknown")
            ready = number_letters(self.store, api, ready)
        items = []
        latest: dict[str, str] = {}
        for letter in ready:
            assert api is not None
            runs_on = self.runs_on(api, letter, run_on_latest_version, latest)
            try:
                instances = api.clear_task_instance(
                    letter.dag_id,
                    letter.run_id,
                    letter.task_id,
                    letter.map_index,
                    dry_run=True,
                    downstream=downstream,
                    run_on_latest_version=run_on_latest_version,
                    keep_task_state=True,  # as the replay will
                )
                items.append(PreviewItem(letter, tuple(instances), runs_on=runs_on))
            except AirflowApiError as exc:
                items.append(PreviewItem(letter, (), error=redact(str(exc)), runs_on=runs_on))
        return Preview(
            tuple(items),
            tuple(refused),
            self.rate_per_minute,
            self.replay_cap,
            downstream,
            run_on_latest_version,
        )

    def runs_on(
        self, api: AirflowApi, letter: Letter, run_on_latest_version: bool | None, latest: dict[str, str]
    ) -> str:
        """The DAG version a replay of ``letter`` runs, as the preview says it (``latest`` caches per DAG)."""
        if run_on_latest_version:
            if letter.dag_id not in latest:
                try:
                    label = self.latest_version_label(api, letter.dag_id)
                except AirflowApiError as exc:  # the dry-run beside it says what went wrong
                    label = f"the latest version (Airflow did not say which: {redact(str(exc), 200)})"
                latest[letter.dag_id] = label or "the latest version (Airflow reports none)"
            return latest[letter.dag_id]
        own = letter.version_label()
        if run_on_latest_version is None:
            return f"{own}, the run's own (unless the DAG or [core] rerun_with_latest_version says latest)"
        return f"{own}, the run's own"

    def latest_fix_version(self, api: AirflowApi, dag_ids: Sequence[str]) -> str | None:
        """The fix version a replay on the latest version records: ``v5``, or ``a v5, b v2`` for several DAGs."""
        labels = {dag_id: self.latest_version_label(api, dag_id) for dag_id in dag_ids}
        if not dag_ids or any(label is None for label in labels.values()):
            return None
        if len(labels) == 1:
            return next(iter(labels.values()))
        return ", ".join(f"{dag_id} {label}" for dag_id, label in labels.items())[:200]

    @staticmethod
    def latest_version_label(api: AirflowApi, dag_id: str) -> str | None:
        """``v5 (bundle dags@ab12cd)``: the newest version Airflow has of ``dag_id``; None when it has none."""
        try:
            versions = api.dag_versions(dag_id)
        except AirflowApiError as exc:
            if exc.status_code == 404:
                return None
            raise
        if not versions:
            return None
        newest = max(versions, key=lambda v: v.version_number)
        label = f"v{newest.version_number}"
        if newest.bundle_version:
            label += f" (bundle {newest.bundle_name or '?'}@{newest.bundle_version[:12]})"
        return label

    # -- claim, pace, clear -----------------------------------------------------------------

    def claim(self, letter: Letter, request: ReplayRequest) -> int | None:
        """``dlq`` -> ``replaying`` with a lease and the replay row, outside any job and pace; the replay id or None."""
        return self.claim_paced(letter, request, paced=False).replay_id

    def claim_paced(
        self,
        letter: Letter,
        request: ReplayRequest,
        *,
        job_id: int | None = None,
        position: int | None = None,
        paced: bool = True,
    ) -> Claim:
        """Take a pace slot and claim ``letter`` in one transaction, or say how long to wait for a slot
        (:meth:`ReplayStore.claim <airflow_retry_provider.dlq.store.ReplayStore.claim>`)."""
        return self.replays.claim(
            letter,
            request,
            replay_cap=self.replay_cap,
            lease_seconds=self.lease_seconds,
            rate_per_minute=self.rate_per_minute if paced else None,
            job_id=job_id,
            position=position,
        )

    def clear(
        self,
        api: AirflowApi,
        letter: Letter,
        replay_id: int,
        request: ReplayRequest,
        job_id: int | None = None,
    ) -> ReplayResult:
        """Clear the claimed letter's task instance (and its downstream); record what Airflow answered."""
        note = replay_note(replay_id, request)
        try:
            cleared = api.clear_task_instance(
                letter.dag_id,
                letter.run_id,
                letter.task_id,
                letter.map_index,
                dry_run=False,
                note=note,
                downstream=request.downstream,
                run_on_latest_version=request.run_on_latest_version,
                # Airflow 3.4 would otherwise wipe what the tasks stored (a remote job's id): the
                # replayed try must be able to reconnect to a job whose outcome is unknown
                keep_task_state=True,
            )
            if not cleared:
                raise AirflowApiError(
                    "Airflow cleared no task instance (is it no longer failed, or the DAG run gone?)", 404
                )
        except AirflowApiError as exc:
            detail = redact(f"clear failed: {exc}", 1000)
            outcome = ItemOutcome.UNKNOWN if exc.outcome_unknown else ItemOutcome.CLEAR_FAILED
            self.replays.clear_failed(letter, replay_id, job_id, detail, lost=exc.outcome_unknown)
            metrics.incr("replay", outcome.replace("-", "_"))
            return ReplayResult(letter.id, outcome, replay_id, detail)
        self.replays.cleared(letter, replay_id, request, job_id, cleared, note, self.lease_seconds)
        metrics.incr("replay", "cleared")
        return ReplayResult(letter.id, ItemOutcome.CLEARED, replay_id, note)


def number_versions(store: DeadLetterStore, api: AirflowApi) -> tuple[int, list[str]]:
    """Look up the number of each DAG version letters name only by UUID (filed by a worker).

    One ``dagVersions`` call per DAG. A version Airflow no longer has (its DAG deleted, or the
    version gone with it) keeps no number: the letter says "number unknown", never a guess.
    Returns how many letters got a number, and the errors (the sweep goes on).
    """
    wanted: dict[str, set[str]] = {}
    for dag_id, version_id in store.unnumbered_versions():
        wanted.setdefault(dag_id, set()).add(version_id)
    return _number(store, api, wanted)


def number_letters(store: DeadLetterStore, api: AirflowApi, letters: Sequence[Letter]) -> list[Letter]:
    """``letters``, each version Airflow still has numbered (``dlq list``, the replay preview).

    Only the letters given are looked at: one ``dagVersions`` call per DAG whose letters name a
    version by UUID alone, none when every number is known. The numbers are stored, as a sweep
    stores them; a version Airflow does not have, or an error, leaves "number unknown".
    """
    wanted: dict[str, set[str]] = {}
    for letter in letters:
        if letter.dag_version_number is None and letter.dag_version_id:
            wanted.setdefault(letter.dag_id, set()).add(letter.dag_version_id)
    if not wanted or _number(store, api, wanted)[0] == 0:
        return list(letters)
    return [(store.get(letter.id) or letter) if letter.dag_id in wanted else letter for letter in letters]


def _number(store: DeadLetterStore, api: AirflowApi, wanted: dict[str, set[str]]) -> tuple[int, list[str]]:
    """Number the versions ``wanted`` (DAG id -> version UUIDs): one ``dagVersions`` call per DAG."""
    numbered, errors = 0, []
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
