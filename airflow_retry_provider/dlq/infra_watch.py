"""The infra watcher: finds the tries of managed tasks that ended with no exception, within a minute (issue 57).

A thread of the api-server plugin (``plugin/driver_thread.py``), beside the replay driver and the
impact thread. Every :data:`POLL_SECONDS` the worker holding the watcher's session lock
(``pg_try_advisory_lock``, one reader per deployment; another worker takes over within a poll when
its connection goes) reads Airflow's REST API:

1. the task instances of the managed DAGs (tagged ``airflow-retry-provider`` or listed in the
   Variable, as the sweeper finds them) that ended ``up_for_retry`` or ``failed`` since its
   watermark, and those whose try 2 or later started since theirs (a retry that waited less than a
   poll is never seen ``up_for_retry``), at most :data:`MAX_PAGES` pages each;
2. for each whose tries are not all explained already (:func:`explained`: a storm's failures, each
   recorded by the retry policy, cost no read), its tries (``GET .../tries``): a failed try with no
   row in ``retry_failed_tries`` (the retry policy records the tries its task's code failed) is read
   as ``dlq/infra.py`` says, and one :func:`~airflow_retry_provider.policy.infra.classify_infra`
   recognises is recorded (class ``infra``); on the task instance's final try its letter is filed
   ``infra/<category>`` or the ``unknown`` letter filed for it is reclassified.

Each stream keeps its watermark as the sweeper keeps its own (``retry_sweep_state`` rows
``infra-watch`` and ``infra-watch-restarted``; :func:`~airflow_retry_provider.dlq.sweeper.watermark_after`):
a read that reached the stream's end moves it to the newest ``end_date`` or ``start_date`` read, and
the next starts :data:`OVERLAP` earlier (a try whose end Airflow committed late is still read; a try
read twice is decided once); a read that stopped at its pages (a storm ending more task instances
than a round reads) goes on from where it stopped, with no overlap, so it always gets through. A
task instance is listed for about :data:`OVERLAP` after it ended or restarted, and its tries that
ended within :data:`LOOKBACK` and are not yet recorded are read then; a try Airflow cannot tell apart
is left to the sweeper (``unknown/filed-by-sweeper``), which reads the same evidence. A round that
fails (Airflow or PostgreSQL away) keeps the watermarks and is tried again after a poll.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from airflow_retry_provider import metrics, settings
from airflow_retry_provider.dlq.infra import EndedTry, InfraOutcome, file_infra, recognise, replaceable
from airflow_retry_provider.dlq.store import DeadLetterStore
from airflow_retry_provider.dlq.sweeper import advance, managed_dag_ids, watermark_after
from airflow_retry_provider.hooks.airflow_api import PAGE_SIZE, AirflowApi, TaskInstanceRef, parse_time
from airflow_retry_provider.policy.infra import INFRA_CLASS
from airflow_retry_provider.policy.redact import redact

log = logging.getLogger(__name__)

WATCH_NAME = "infra-watch"
"""The watcher's row in ``retry_sweep_state``."""
POLL_SECONDS = 15.0
OVERLAP = timedelta(minutes=2)
"""Each read starts this much before the watermark: a try whose end Airflow committed late is still read."""
LOOKBACK = timedelta(hours=1)
"""A first read (no watermark) starts this long ago; older failures are the sweeper's."""
MAX_PAGES = 5
ENDED_STATES = ("up_for_retry", "failed")


@dataclass(frozen=True)
class Stream:
    """One read of Airflow's bulk list of task instances, with its own watermark (its row ``name`` in
    ``retry_sweep_state``): those that ``ENDED`` failed or up for retry (a final failure, a retry not
    yet started), and those ``RESTARTED`` (a try 2 or later started: the try before it ended, maybe
    while the retry waited less than a poll)."""

    name: str
    states: tuple[str, ...] | None
    order_by: str
    mark: Callable[[TaskInstanceRef], datetime | None]


ENDED = Stream(WATCH_NAME, ENDED_STATES, "end_date", lambda ti: ti.end_date)
RESTARTED = Stream(f"{WATCH_NAME}-restarted", None, "start_date", lambda ti: ti.start_date)


@dataclass(frozen=True)
class WatchRound:
    """What one round did: task instances read, tries recognised (by category), letters filed, errors,
    and what it cost: the REST calls it made and its thread's CPU seconds."""

    read: int = 0
    recognised: tuple[InfraOutcome, ...] = ()
    errors: tuple[str, ...] = ()
    watermark: datetime | None = None
    calls: int = 0
    cpu_seconds: float = 0.0


def explained(ti: TaskInstanceRef, recorded: Mapping[int, str]) -> bool:
    """Whether every try of ``ti`` that ended has a failure recorded (``recorded``: try number to class)
    that leaves the watcher nothing to do, so its tries need not be read.

    A try the task's code failed (the retry policy recorded its class) is explained; an ``infra`` one
    is, except the task instance's final try, whose letter may still be filed or reclassified. The
    current try counts only once it ended (up for retry or failed).
    """
    last = ti.try_number if ti.state in ENDED_STATES else ti.try_number - 1
    final = ti.try_number if ti.state == "failed" else None
    return last >= 1 and all(
        number in recorded and not (recorded[number] == INFRA_CLASS and number == final)
        for number in range(1, last + 1)
    )


def ended_tries(api: AirflowApi, ti: TaskInstanceRef, since: datetime) -> list[EndedTry]:
    """The tries of ``ti`` that ended failed (or up for retry) at or after ``since`` (the lookback), oldest first.

    A try not started whose row carries the previous try's times (Airflow 3.4 creates the next
    try's row as soon as one fails) is skipped.
    """
    found: list[EndedTry] = []
    previous_start = None
    for item in api.tries(ti.dag_id, ti.run_id, ti.task_id, ti.map_index):
        start, end = parse_time(item.get("start_date")), parse_time(item.get("end_date"))
        carried = start is not None and start == previous_start
        previous_start = start
        state = str(item.get("state") or "")
        if carried or state not in ENDED_STATES or end is None or end < since:
            continue
        try_number = int(item.get("try_number") or 0)
        found.append(
            EndedTry(
                dag_id=ti.dag_id,
                run_id=ti.run_id,
                task_id=ti.task_id,
                map_index=ti.map_index,
                try_number=try_number,
                state=state,
                hostname=item.get("hostname") or None,
                end_date=end,
                final=ti.state == "failed" and try_number == ti.try_number,
                max_tries=ti.max_tries,
                note=ti.note,
                version=ti.version_fields(),
            )
        )
    return found


class InfraWatcher:
    """Reads what ended in Airflow and files the tries no exception explains (see the module).

    :param store: the letters and the failed tries.
    :param api_factory: the Airflow REST client (kept between rounds).
    :param managed: DAG ids watched besides the tagged and listed ones.
    """

    def __init__(
        self,
        store: DeadLetterStore,
        api_factory: Callable[[], AirflowApi],
        poll: float = POLL_SECONDS,
        managed: Iterable[str] = (),
    ) -> None:
        self.store = store
        self._api_factory = api_factory
        self.poll = poll
        self.managed = tuple(managed)
        self._api: AirflowApi | None = None

    @property
    def api(self) -> AirflowApi:
        if self._api is None:
            self._api = self._api_factory()
        return self._api

    def round(self, now: datetime | None = None) -> WatchRound:
        """One read of each stream from its watermark: record and file what it recognises; the ended
        stream's watermark after it."""
        now = now or datetime.now(timezone.utc)
        cpu_before, calls_before = time.thread_time(), self.api.calls
        dags = managed_dag_ids(self.api, self.managed)
        recognised: list[InfraOutcome] = []
        errors: list[str] = []
        runs: dict[tuple[str, str], dict[str, Any]] = {}
        read = 0
        cap = settings.replay_max_attempts()
        seen: set[tuple[str, str, str, int]] = set()
        watermark = None
        for stream in (ENDED, RESTARTED):
            state = self.store.sweep_state(stream.name)
            if state.watermark is None:
                cursor, skip = now - LOOKBACK, 0
            elif state.caught_up:
                cursor, skip = state.watermark - OVERLAP, 0
            else:  # the last read stopped at its pages: on from there, with no overlap
                cursor, skip = state.watermark, state.watermark_skip
            caught_up = True
            for _ in range(MAX_PAGES if dags else 0):
                items, _ = self.api.task_instances_batch(
                    dag_ids=dags,
                    states=stream.states,
                    ended_from=cursor if stream is ENDED else None,
                    started_from=cursor if stream is RESTARTED else None,
                    order_by=stream.order_by,
                    offset=skip,
                    limit=PAGE_SIZE,
                )
                read += len(items)
                for ti in items:
                    key = (ti.dag_id, ti.run_id, ti.task_id, ti.map_index)
                    if key in seen or (stream is RESTARTED and ti.try_number < 2):
                        continue
                    seen.add(key)
                    try:
                        recognised.extend(self._watch(ti, now - LOOKBACK, runs, cap))
                    except Exception as exc:  # one task instance is logged; the round goes on
                        errors.append(
                            f"{ti.dag_id}/{ti.run_id}/{ti.task_id}: {type(exc).__name__}: {redact(str(exc))}"
                        )
                        log.warning("airflow-retry-provider: infra watcher skipped %s", errors[-1])
                marks = [mark for ti in items if (mark := stream.mark(ti)) is not None]
                cursor, skip = advance(cursor, skip, marks, len(items))
                caught_up = len(items) < PAGE_SIZE
                if caught_up:
                    break
            if dags:
                state = watermark_after(state, cursor, skip, caught_up, now - OVERLAP)
                self.store.save_sweep_state(state, stream.name)
            if stream is ENDED:
                watermark = state.watermark
        return WatchRound(
            read,
            tuple(recognised),
            tuple(errors),
            watermark,
            calls=self.api.calls - calls_before,
            cpu_seconds=time.thread_time() - cpu_before,
        )

    def _watch(
        self, ti: TaskInstanceRef, since: datetime, runs: dict[tuple[str, str], dict[str, Any]], cap: int
    ) -> list[InfraOutcome]:
        recorded = {
            failed.try_number: failed.failure_class
            for failed in self.store.failed_tries(ti.dag_id, ti.run_id, ti.task_id, ti.map_index)
        }
        if explained(ti, recorded):
            return []
        tries = ended_tries(self.api, ti, since)
        if not tries:
            return []
        letter = self.store.letter_of(ti.dag_id, ti.run_id, ti.task_id, ti.map_index)
        done: list[InfraOutcome] = []
        for ended in tries:
            seen = recorded.get(ended.try_number)
            if seen is not None and (seen != INFRA_CLASS or not ended.final):
                continue  # the policy recorded what the task's code raised, or this try was recognised
            if ended.final and letter is not None and letter.try_number >= ended.try_number:
                if not replaceable(letter):
                    continue  # the callback filed what the code raised, or the infra letter is filed
            found = recognise(self.api, ended)
            if found is None:
                continue
            key = (ti.dag_id, ti.run_id)
            if ended.final and key not in runs:
                runs[key] = self.api.dag_run(*key)
            outcome = file_infra(self.store, ended, found, runs.get(key, {}), cap)
            if outcome.recorded:
                metrics.infra_try(found.category)
            done.append(outcome)
        return done

    def loop(self, stop: threading.Event) -> None:
        """Lead and watch every ``poll`` seconds until ``stop`` is set. Never raises."""
        try:
            while not stop.is_set():
                try:
                    with self.store.infra_watch_lead() as try_lead:
                        while not stop.is_set():
                            if try_lead():
                                done = self.round()
                                if done.read or done.errors:
                                    log.info(
                                        "airflow-retry-provider: infra watcher read %s task instance(s) "
                                        "with %s REST call(s) in %.2f CPU-s, recognised %s, errors %s",
                                        done.read,
                                        done.calls,
                                        done.cpu_seconds,
                                        [outcome.category for outcome in done.recognised],
                                        list(done.errors)[:5],
                                    )
                            stop.wait(self.poll)
                except Exception as exc:  # the database or Airflow went away: look again after a poll
                    log.warning("airflow-retry-provider: infra watcher round failed: %s", redact(str(exc)))
                    if self._api is not None:
                        self._api.close()
                        self._api = None
                    stop.wait(self.poll)
        finally:
            if self._api is not None:
                self._api.close()
