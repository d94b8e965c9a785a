"""What a dead letter blocks, read from Airflow's REST API (issue 48); the decision is :mod:`policy.impact`.

For a letter, :class:`ImpactReader` asks Airflow (never its metadata database):

- ``GET /api/v2/dags/{dag_id}/tasks``: the DAG's tasks, their downstream ids, trigger rules and
  params (a delivery deadline is the param :data:`DELIVERY_PARAM`, see below; a workspace the
  param ``workspace_id``);
- ``GET /api/v2/dags/{dag_id}/dagRuns/~/taskInstances?state=success&order_by=-end_date``: the
  recent successful durations, one page of at most :data:`HISTORY_PAGE` for the whole DAG, the
  newest :data:`HISTORY_PER_TASK` of each task kept;
- ``GET /api/v2/assets?dag_ids={dag_id}``: the assets its tasks produce (``producing_tasks``) and
  the DAGs scheduled on them (``scheduled_dags``); for each of those (at most
  :data:`MAX_CONSUMER_DAGS`), its tasks and durations the same way. One level: the DAGs scheduled
  on a consumer's own assets are not followed.

**Where a delivery deadline comes from.** Airflow's REST API does not show a task's
``retry_policy``, so ``apply_profile(task, profile, deadline=DeliveryDeadline(...))`` also writes
the deadline (with ``expected_duration`` and ``validation``) into the task's params under
``retry_provider_delivery``: ``{"at": "09:00", "timezone": "America/Sao_Paulo", "days_after": 1,
"expected_duration_seconds": 600, "validation_seconds": 120}``. The same param can be written by
hand on a task, or on a DAG (``params={...}``): a DAG-level one is the delivery of the DAG's last
tasks (those with no downstream). Every deadline is resolved against the failed run's data
interval end (or its run date), as the failed task's own ``DeliveryDeadline`` is: a consumer DAG's
run for that data arrives after it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

from airflow_retry_provider import announce
from airflow_retry_provider.dlq.announce import ImpactAssessed
from airflow_retry_provider.dlq.models import Letter, NewLetter
from airflow_retry_provider.dlq.store import DeadLetterStore, FilingListener
from airflow_retry_provider.hooks.airflow_api import AirflowApi, AirflowApiError, parse_time
from airflow_retry_provider.masking import mask
from airflow_retry_provider.policy.fields import FieldError
from airflow_retry_provider.policy.impact import (
    DELIVERY_PARAM,
    Impact,
    TaskFacts,
    assess_impact,
    parse_delivery,
)
from airflow_retry_provider.policy.redact import redact
from airflow_retry_provider.policy.text import storable

log = logging.getLogger(__name__)

WORKSPACE_PARAM = "workspace_id"
HISTORY_PAGE = 500
HISTORY_PER_TASK = 10
MAX_CONSUMER_DAGS = 20
MAX_ASSET_PAGES = 5
PAGE_SIZE = 100
REFRESH_EVERY = timedelta(minutes=5)
"""A sweep recomputes an open letter's impact once it is older than this."""
REFRESH_LIMIT = 25
"""At most this many letters per sweep (each costs a few REST calls per DAG)."""


@dataclass(frozen=True)
class _TaskRef:
    """The failed (or held) task whose impact is assessed."""

    dag_id: str
    task_id: str
    workspace_id: str | None


def _param(params: object, name: str) -> tuple[Any, str | None]:
    """A param's value and its source (``dag`` or ``task``) from the tasks endpoint's dump."""
    if not isinstance(params, Mapping) or name not in params:
        return None, None
    entry = params[name]
    if isinstance(entry, Mapping) and "value" in entry:
        return entry["value"], entry.get("source")
    return entry, None


class ImpactReader:
    """Reads what :func:`~airflow_retry_provider.policy.impact.assess_impact` needs for a letter.

    :param api: Airflow's REST API.
    """

    def __init__(self, api: AirflowApi, cache: ReadCache | None = None, scope: Hashable = None) -> None:
        self.api = api
        self.cache = cache if cache is not None else ReadCache(ttl=0.0)
        self.scope = scope
        self.notes: list[str] = []

    def _get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        """``GET path`` through the cache, kept for this reader's ``scope`` (a DAG run): the letters of one
        run ask Airflow once, and another run of the DAG reads its history afresh."""
        key = (self.scope, path, tuple(sorted((params or {}).items())))
        return self.cache.read(key, lambda: self.api.request("GET", path, params=dict(params or {})))

    def assess(self, letter: NewLetter, now: datetime) -> Impact:
        """The impact of ``letter`` as of ``now``."""
        anchor = letter.data_interval_end or self.run_anchor(letter.dag_id, letter.run_id)
        return self.assess_task(letter.dag_id, letter.task_id, anchor, letter.workspace_id, now)

    def assess_task(
        self, dag_id: str, task_id: str, anchor: datetime | None, workspace_id: str | None, now: datetime
    ) -> Impact:
        """What ``dag_id.task_id`` of the run whose data interval ends at ``anchor`` blocks while it
        does not succeed (a dead letter's task, or a task a breaker holds), as of ``now``."""
        letter = _TaskRef(dag_id, task_id, workspace_id)
        tasks = self.dag_tasks(letter.dag_id, anchor)
        consumers: dict[str, list[str]] = {}
        outlets: dict[str, list[str]] = defaultdict(list)
        for asset in self.assets_of(letter.dag_id):
            name = str(asset.get("name") or asset.get("uri"))
            producers = [p for p in asset.get("producing_tasks") or () if p.get("dag_id") == letter.dag_id]
            if not producers:  # an asset the DAG only consumes: its consumers are not blocked by it
                continue
            for producer in producers:
                outlets[str(producer["task_id"])].append(name)
            consumers[name] = [str(dag["dag_id"]) for dag in asset.get("scheduled_dags") or ()]
        tasks = [replace(facts, outlets=tuple(outlets.get(facts.task_id, ()))) for facts in tasks]
        if letter.workspace_id:  # the letter knows its own workspace best (the task's attribute or param)
            tasks = [
                replace(facts, workspace=letter.workspace_id) if facts.task_id == letter.task_id else facts
                for facts in tasks
            ]
        consumer_dags = sorted({dag_id for dags in consumers.values() for dag_id in dags} - {letter.dag_id})
        if len(consumer_dags) > MAX_CONSUMER_DAGS:
            self.notes.append(f"{len(consumer_dags)} consumer DAGs: the first {MAX_CONSUMER_DAGS} read")
        for dag_id in consumer_dags[:MAX_CONSUMER_DAGS]:
            try:
                tasks.extend(self.dag_tasks(dag_id, anchor))
            except AirflowApiError as exc:  # listed without its tasks
                self.notes.append(f"consumer DAG {dag_id}: {_safe(exc)}")
        return assess_impact((letter.dag_id, letter.task_id), tasks, consumers, now=now)

    def run_anchor(self, dag_id: str, run_id: str) -> datetime | None:
        """The run's data interval end (its run date without one); None if Airflow does not say."""
        try:
            run = self._get(f"/api/v2/dags/{quote(dag_id, safe='')}/dagRuns/{quote(run_id, safe='')}")
        except AirflowApiError:
            return None
        return parse_time(run.get("data_interval_end")) or parse_time(run.get("run_after"))

    def dag_tasks(self, dag_id: str, anchor: datetime | None) -> list[TaskFacts]:
        """The facts of every task of ``dag_id``: structure, params and recent durations."""
        answer = self._get(f"/api/v2/dags/{quote(dag_id, safe='')}/tasks")
        durations = self.recent_durations(dag_id)
        found = []
        for task in answer.get("tasks", []):
            task_id = str(task["task_id"])
            downstream = tuple(str(item) for item in task.get("downstream_task_ids") or ())
            params = task.get("params")
            deadline_at: datetime | None = None
            expected: timedelta | None = None
            validation = timedelta(0)
            value, source = _param(params, DELIVERY_PARAM)
            if value is not None:
                try:
                    spec = parse_delivery(f"{dag_id}.{task_id}.params.{DELIVERY_PARAM}", value)
                except FieldError as exc:  # a bad declaration: the task counts without it
                    self.notes.append(str(exc))
                else:
                    expected, validation = spec.expected_duration, spec.validation
                    if source != "dag" or not downstream:  # a DAG's delivery is its last tasks'
                        deadline_at = spec.resolve(anchor)
            workspace, _ = _param(params, WORKSPACE_PARAM)
            found.append(
                TaskFacts(
                    dag_id=dag_id,
                    task_id=task_id,
                    downstream=downstream,
                    trigger_rule=str(task.get("trigger_rule") or "all_success"),
                    recent_durations=tuple(durations.get(task_id, ())),
                    expected_duration=expected,
                    validation=validation,
                    deadline=deadline_at,
                    workspace=str(workspace) if workspace else None,
                )
            )
        return found

    def recent_durations(self, dag_id: str) -> dict[str, list[timedelta]]:
        """The newest successful durations of each task of ``dag_id`` (one page for the whole DAG)."""
        page = self._get(
            f"/api/v2/dags/{quote(dag_id, safe='')}/dagRuns/~/taskInstances",
            params={"state": "success", "order_by": "-end_date", "limit": HISTORY_PAGE},
        )
        found: dict[str, list[timedelta]] = defaultdict(list)
        for item in page.get("task_instances", []):
            duration = item.get("duration")
            kept = found[str(item["task_id"])]
            if isinstance(duration, int | float) and duration >= 0 and len(kept) < HISTORY_PER_TASK:
                kept.append(timedelta(seconds=float(duration)))
        return found

    def assets_of(self, dag_id: str) -> Iterator[dict[str, Any]]:
        """The assets ``dag_id`` produces, consumes or is scheduled on (bounded pages)."""
        for number in range(MAX_ASSET_PAGES):
            page = self._get(
                "/api/v2/assets",
                params={"dag_ids": dag_id, "limit": PAGE_SIZE, "offset": number * PAGE_SIZE},
            )
            assets = list(page.get("assets", []))
            yield from assets
            if len(assets) < PAGE_SIZE:
                return
        self.notes.append(f"more than {MAX_ASSET_PAGES * PAGE_SIZE} assets: the rest not read")


class ReadCache:
    """Airflow's answers to the impact's reads, each kept ``ttl`` seconds (at most ``max_entries``, the
    oldest dropped first): the letters of one DAG run, filed in a storm, ask Airflow once (issue 58).

    An error is never kept. :attr:`reads` counts the calls that reached Airflow (the misses).
    """

    def __init__(
        self, ttl: float = 300.0, max_entries: int = 1024, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl = ttl
        self.max_entries = max_entries
        self._clock = clock
        self._answers: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()
        self.reads = 0

    def read(self, key: Hashable, fetch: Callable[[], Any]) -> Any:
        """The answer kept for ``key`` if younger than ``ttl``; else ``fetch()``, kept."""
        now = self._clock()
        kept = self._answers.get(key)
        if kept is not None and now - kept[0] < self.ttl:
            return kept[1]
        self.reads += 1
        answer = fetch()
        if self.ttl > 0:
            self._answers[key] = (now, answer)
            self._answers.move_to_end(key)
            while len(self._answers) > self.max_entries:
                self._answers.popitem(last=False)
        return answer


def _safe(exc: BaseException) -> str:
    """An error's text as a log line may hold it: redacted, masked, storable, bounded."""
    return storable(mask(redact(str(exc))))[:300]


def record_impact(
    store: DeadLetterStore, api: AirflowApi, letter_id: int, letter: NewLetter, now: datetime
) -> Impact:
    """Compute, store and announce the impact of one letter (raises on an API error)."""
    reader = ImpactReader(api)
    impact = reader.assess(letter, now)
    if reader.notes:  # a bad declaration, a consumer DAG Airflow did not answer for: counted without
        log.warning("airflow-retry-provider: impact of letter %s: %s", letter_id, reader.notes[:20])
    store.set_impact(letter_id, impact)
    announce.tell(ImpactAssessed(store.db, letter_id, letter, impact))
    return impact


def refresh_impacts(
    store: DeadLetterStore, api: AirflowApi, now: datetime, limit: int = REFRESH_LIMIT
) -> tuple[list[int], list[str]]:
    """The sweeper's step: recompute the impact of open letters not refreshed for :data:`REFRESH_EVERY`.

    Returns the letters refreshed and one error line per letter Airflow could not answer for.
    """
    refreshed: list[int] = []
    errors: list[str] = []
    for letter in store.letters_due_impact(REFRESH_EVERY.total_seconds(), limit):
        try:
            record_impact(store, api, letter.id, letter, now)
        except (AirflowApiError, FieldError) as exc:
            errors.append(f"impact of letter {letter.id}: {_safe(exc)}")
            # its DAG is gone (404), or its task is no longer in it: nothing to block, not asked again soon
            if isinstance(exc, FieldError) or exc.status_code == 404:
                store.set_impact(letter.id, Impact())
            continue
        except Exception as exc:  # one letter never stops the sweep
            errors.append(f"impact of letter {letter.id}: {type(exc).__name__}: {_safe(exc)}")
            continue
        refreshed.append(letter.id)
    if errors:
        log.warning("airflow-retry-provider: impacts not refreshed: %s", errors)
    return refreshed, errors


# -- letters awaiting their impact (issue 58) ------------------------------------------------------

CLAIM_LIMIT = 500
"""Letters claimed per round: a storm's letters are taken in a few rounds, grouped by DAG run."""
LEASE_SECONDS = 120.0
"""A claim's lease: another process takes the letters over once it expired (their computer died)."""
MAX_ATTEMPTS = 5
"""Claims of a letter before its impact is given up (with the reason; the sweeper's refresh then has it)."""
RETRY_SECONDS = 30.0
"""After a failed claim, the letter waits this many seconds times its attempts (30 s, 60 s, ... 2 min 30)."""
CACHE_SECONDS = 300.0
"""How long the impact thread keeps Airflow's answers for a DAG run's letters (as long as a sweep lets an
impact age, REFRESH_EVERY); another run of the DAG reads afresh."""
SWEEPER_HANDOVER_SECONDS = 120.0
"""A letter awaiting its impact this long is computed by the sweeper too (no api-server computed it)."""


@dataclass(frozen=True)
class ImpactRound:
    """What one round of :func:`compute_pending` did.

    :param claimed: letters claimed.
    :param computed: letters whose impact was stored.
    :param runs: DAG runs they belong to.
    :param reads: REST reads it made (the cache's misses).
    :param errors: one line per group of letters whose impact could not be computed (tried again later).
    :param cpu_seconds: the CPU its thread spent (in the api-server, beside the UI's requests).
    """

    claimed: int = 0
    computed: int = 0
    runs: int = 0
    reads: int = 0
    errors: tuple[str, ...] = ()
    cpu_seconds: float = 0.0


def compute_pending(
    store: DeadLetterStore,
    api: AirflowApi,
    now: datetime,
    cache: ReadCache,
    *,
    limit: int = CLAIM_LIMIT,
    min_age_seconds: float = 0.0,
) -> ImpactRound:
    """Claim letters awaiting their impact and compute it once per task of each DAG run (issue 58).

    The letters of one task in one run (a mapped task's instances) block the same things: one
    :class:`ImpactReader` assessment is stored for all of them in one transaction, and announced once
    per root cause (the delivery-at-risk alert is told once per root cause and delivery anyway). Reads
    go through ``cache``, so a DAG run's tasks, history and assets are asked once for its letters,
    whichever round claims them. A group Airflow does not answer for is tried again after
    :data:`RETRY_SECONDS` x its attempts, and given up with its reason after :data:`MAX_ATTEMPTS`; a DAG
    that is gone (404) or a task no longer in it gets an empty impact, as a sweep's refresh does.
    """
    cpu_before = time.thread_time()
    claimed = store.claim_impacts(limit, LEASE_SECONDS, min_age_seconds)
    if not claimed:
        return ImpactRound()
    reads_before = cache.reads
    groups: dict[tuple[str, str, str, str | None], list[Letter]] = defaultdict(list)
    for letter, _attempts in claimed:
        groups[(letter.dag_id, letter.run_id, letter.task_id, letter.workspace_id)].append(letter)
    computed = 0
    errors: list[str] = []
    for (dag_id, run_id, task_id, _), letters in groups.items():
        ids = [letter.id for letter in letters]
        reader = ImpactReader(api, cache, scope=(dag_id, run_id))
        try:
            impact = reader.assess(letters[0], now)
        except (AirflowApiError, FieldError) as exc:
            if isinstance(exc, FieldError) or exc.status_code == 404:  # nothing left to block
                store.set_impacts(ids, Impact())
                computed += len(ids)
                continue
            errors.append(_not_computed(store, ids, f"{dag_id}/{run_id}/{task_id}", exc))
            continue
        except Exception as exc:  # one run never stops the others
            errors.append(_not_computed(store, ids, f"{dag_id}/{run_id}/{task_id}", exc))
            continue
        if reader.notes:
            log.warning(
                "airflow-retry-provider: impact of %s/%s/%s: %s", dag_id, run_id, task_id, reader.notes[:20]
            )
        store.set_impacts(ids, impact)
        computed += len(ids)
        told: set[str] = set()
        for letter in letters:  # one announcement per root cause of the group
            if letter.fingerprint not in told:
                told.add(letter.fingerprint)
                announce.tell(ImpactAssessed(store.db, letter.id, letter, impact))
    done = ImpactRound(
        claimed=len(claimed),
        computed=computed,
        runs=len({(dag_id, run_id) for dag_id, run_id, _, _ in groups}),
        reads=cache.reads - reads_before,
        errors=tuple(errors),
        cpu_seconds=time.thread_time() - cpu_before,
    )
    log.info(
        "airflow-retry-provider: impact of %s letter(s) of %s DAG run(s) computed with %s REST read(s) "
        "in %.2f CPU-s%s",
        done.computed,
        done.runs,
        done.reads,
        done.cpu_seconds,
        f"; not computed: {list(done.errors)[:5]}" if done.errors else "",
    )
    return done


def _not_computed(store: DeadLetterStore, letter_ids: Sequence[int], where: str, exc: BaseException) -> str:
    """Record that the impact of ``letter_ids`` could not be computed now; the error line."""
    reason = f"{type(exc).__name__}: {_safe(exc)}"
    store.impact_not_computed(letter_ids, reason, MAX_ATTEMPTS, RETRY_SECONDS)
    return f"{where} ({len(letter_ids)} letter(s)): {reason}"


POLL_SECONDS = 10.0
"""How often the impact thread looks without a notice (a notice lost, a retry due, the lead to take)."""

GATHER_SECONDS = 2.0
"""After a notice, how long the thread lets more letters come before its round: a storm's letters are
claimed and assessed together, not in a round each (a round's claim, assessment, store and
announcement run in the api-server's process, beside the UI's requests: bench/storm.py's CPU rows)."""


class ImpactWorker:
    """Computes the impacts of letters as they are filed, in one long-lived process (the api-server
    plugin's impact thread, issue 58).

    It listens for letters filed (``NOTIFY retry_provider_filed``, sent by the filing's transaction),
    and looks every ``poll`` seconds besides. Only the process holding the session lock computes
    (:meth:`~airflow_retry_provider.dlq.store.letters.FilingListener.try_lead`), so its
    :class:`ReadCache` reads each DAG run once for the whole deployment; another one takes over
    within ``poll`` seconds when its connection goes.

    :param store: the letters (its database gives the listener a dedicated connection).
    :param api_factory: returns the Airflow REST client the reads go through (kept between rounds).
    :param gather: seconds a notice waits for more letters before the round (:data:`GATHER_SECONDS`).
    """

    def __init__(
        self,
        store: DeadLetterStore,
        api_factory: Callable[[], AirflowApi],
        poll: float = POLL_SECONDS,
        cache: ReadCache | None = None,
        gather: float = GATHER_SECONDS,
    ) -> None:
        self.store = store
        self._api_factory = api_factory
        self.poll = poll
        self.gather = gather
        self.cache = cache if cache is not None else ReadCache(ttl=CACHE_SECONDS)
        self._api: AirflowApi | None = None

    def drain(self, now: Callable[[], datetime]) -> list[ImpactRound]:
        """Rounds of :func:`compute_pending` until fewer letters than a full claim are left."""
        done: list[ImpactRound] = []
        while True:
            if self._api is None:
                self._api = self._api_factory()
            finished = compute_pending(self.store, self._api, now(), self.cache)
            if finished.claimed:
                done.append(finished)
            if finished.claimed < CLAIM_LIMIT:
                return done

    def _wait(self, listener: FilingListener, stop: threading.Event) -> None:
        """Until a letter is filed (and ``gather`` seconds more), ``poll`` seconds pass, or ``stop`` is
        set (looked at every second)."""
        waited = 0.0
        while not stop.is_set() and waited < self.poll:
            if listener.wait(min(1.0, self.poll - waited)):
                stop.wait(self.gather)
                return
            waited += 1.0

    def loop(self, stop: threading.Event) -> None:
        """Listen, lead, and drain until ``stop`` is set. Never raises."""
        from datetime import timezone

        try:
            while not stop.is_set():
                try:
                    with self.store.listening() as listener:
                        while not stop.is_set():
                            if listener.try_lead():
                                self.drain(lambda: datetime.now(timezone.utc))
                            self._wait(listener, stop)
                except Exception as exc:  # the database or Airflow went away: look again after a poll
                    log.warning("airflow-retry-provider: impact thread round failed: %s", _safe(exc))
                    stop.wait(self.poll)
        finally:
            if self._api is not None:
                self._api.close()
