"""The replay driver: submits replay jobs and works them through, one letter at a time.

:func:`replay_and_wait` is how a replay starts in a process that waits for it (the CLI): it submits the
job for the selection and drives it here.

Any process may run one: each api-server worker (a daemon thread), ``airflow-retry dlq drive``,
``airflow-retry dlq replay`` (for its own job), and the sweeper DAG (what is left). A driver holds
a job by its lease (taken with ``FOR UPDATE SKIP LOCKED``, renewed before each letter); a driver
that dies loses the job when the lease expires and another one resumes it. A letter the dead
driver had claimed is never cleared again by the job: its item is recorded ``unknown`` and the
sync decides from Airflow's state (resolved, filed again, or back to ``dlq``).

A job with a canary (``canary_position``) clears that letter first and waits for its replay's
outcome, asking Airflow about that letter only (``OutcomeSync.sync_letter``: one REST call a look)
every few seconds, until ``replay_canary_timeout_seconds``:
success lets the rest follow at the rising pace (``decide.PACE_STEPS``), failure or no answer in time
stops the job with the other letters untouched in ``dlq``. ``decide.STOP_AFTER_FAILURES`` failed
replays in a row stop it part-way. All of it is read from the job's row, so any driver continues
it. The verdicts are ``dlq/decide.py``'s (``canary_verdict``, ``stop_rule``, ``claim_refusal``):
the driver reads, asks them, and applies what they say.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import fields
from enum import Enum

from airflow_retry_provider import announce
from airflow_retry_provider.dlq.announce import JobFailed
from airflow_retry_provider.dlq.decide import (
    PACE_STEPS,
    Canary,
    canary_verdict,
    claim_refusal,
    step_rate,
    stop_rule,
)
from airflow_retry_provider.dlq.models import (
    JobItem,
    Letter,
    Progress,
    ReplayJob,
    ReplayReport,
    ReplayRequest,
    ReplayResult,
)
from airflow_retry_provider.dlq.replay import DEFAULT_SELECTION_LIMIT, ReplayEngine
from airflow_retry_provider.dlq.store import JobStore, JobTurn, JobView, LetterFilter
from airflow_retry_provider.dlq.sync import OutcomeSync, settle_claims
from airflow_retry_provider.hooks.airflow_api import AirflowApi
from airflow_retry_provider.policy import redact
from airflow_retry_provider.states import ITEM_CLEARED, ITEM_OPEN, ItemOutcome

log = logging.getLogger(__name__)

SETTLE_PAGES = 50  # a driver's pass over open claims reads at most this many pages (5,000 claims)
MAX_PACE_NAP = 5.0  # a driver waiting for the pace wakes this often to renew its lease and see a cancel


def interval_seconds() -> float:
    """``[retry_provider] replay_driver_interval_seconds`` (default 5): how often an idle driver looks."""
    from airflow_retry_provider import settings

    return max(0.1, float(settings.replay_driver_interval_seconds().total_seconds()))


def canary_timeout_seconds() -> int:
    """``[retry_provider] replay_canary_timeout_seconds`` (default 1800): how long a canary is awaited."""
    from airflow_retry_provider import settings

    return settings.replay_canary_timeout_seconds()


class Step(Enum):
    """What a driver's step says of the job it works: go on, or why the driver leaves the job here."""

    GO = "go"  # carry on with the job
    ENDED = "ended"  # no letter left: the store ended the job with the turn (another job may wait)
    ALL_ENDED = "all-ended"  # the same, and the store saw no other job waiting
    STOPPED = (
        "stopped"  # the stop rule or the canary's verdict stopped it (its unclaimed letters stay in dlq)
    )
    DEADLINE = "deadline"  # the round's deadline came first: the job is released for another driver
    LOST = "lost"  # the job is no longer this driver's: cancelled, stopped, or taken over by another


def request_of(job: ReplayJob) -> ReplayRequest:
    """What the person asked for, as recorded on the job."""
    return ReplayRequest(**{f.name: getattr(job, f.name) for f in fields(ReplayRequest)})


class ReplayDriver:
    """Claims replay jobs and clears their letters at the deployment's pace.

    :param engine: the replay engine (claims and clears; its store, replay cap, pace and lease are the driver's too).
    :param api_factory: returns the Airflow REST client to clear with.
    :param close_api: close the client it made after each round or job (False when the caller owns it).
    :param owner: this driver's name in the job's lease (host, pid and a random suffix by default).
    """

    def __init__(
        self,
        engine: ReplayEngine,
        api_factory: Callable[[], AirflowApi],
        *,
        close_api: bool = True,
        owner: str | None = None,
        sleep: Callable[[float], None] | None = None,
        canary_timeout: int | None = None,
        pace_steps: Sequence[tuple[int, int]] = PACE_STEPS,
        canary_poll: float = MAX_PACE_NAP,
    ) -> None:
        self.engine = engine
        self.store = engine.store  # the driver's own handle: it reads letters and settles claims through it
        self.canary_timeout = canary_timeout if canary_timeout is not None else canary_timeout_seconds()
        self.pace_steps = tuple(pace_steps)
        self.canary_poll = canary_poll
        self.jobs = JobStore(self.store.db)
        self._api_factory = api_factory
        self._close_api = close_api
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._sleep = sleep or engine.sleep

    @property
    def lease_seconds(self) -> int:
        return self.engine.lease_seconds

    # -- whole jobs ------------------------------------------------------------------------

    def submit(self, request: ReplayRequest, letters: Sequence[Letter], canary: bool | int = False) -> int:
        """A new job for ``letters`` (``canary``: True, the newest first; a letter id, that one); its id."""
        if isinstance(canary, bool):
            return self.jobs.create(request, letters, canary=canary)
        return self.jobs.create(request, letters, canary_letter_id=canary)

    def results(self, job_id: int) -> list[ReplayResult]:
        """What the job did with each of its letters, in order."""
        return self.jobs.results(job_id)

    def run_job(self, job_id: int, progress: Progress | None = None, poll: float = 1.0) -> None:
        """Drive ``job_id`` here until it is finished; while another process holds it, follow its progress."""
        reported = 0

        def mine(result: ReplayResult, done: int, total: int) -> None:
            nonlocal reported
            reported = done
            if progress is not None:
                progress(result, done, total)

        while True:
            turn = self.jobs.claim(self.owner, self.lease_seconds, job_id)
            if turn is not None:
                self._drive(turn, mine, reported)
            view = self.jobs.require(job_id)
            done = [item for item in view.items if item.outcome not in ITEM_OPEN]
            for n, item in enumerate(done[reported:], start=reported + 1):
                mine(item.result(), n, len(view.items))
            if view.job.finished:
                return
            self._sleep(poll)

    def drain(self, deadline: float | None = None) -> list[int]:
        """Settle open claims, then drive open jobs one after another until none is left or ``deadline``;
        one Airflow client for the round."""
        driven: list[int] = []
        with self._client() as api:
            self.settle(api)
            more = True  # a job that ends says whether another waits: no claim then finds none
            while more and (deadline is None or time.monotonic() < deadline):
                turn = self.jobs.claim(self.owner, self.lease_seconds)
                if turn is None:
                    break
                more = self._drive(turn, None, 0, deadline, api) is not Step.ALL_ENDED
                driven.append(turn.job.id)
        return driven

    def settle(self, api: AirflowApi | None = None) -> None:
        """Decide claims whose lease expired or whose clear's answer was lost (see ``OutcomeSync.sync_replaying_batched``)."""
        with self._client(api) as api:
            report = settle_claims(self.store, api, self.engine.replay_cap, SETTLE_PAGES)
            if report.released or report.resolved or report.refiled:
                log.info("airflow-retry-provider: driver settled claims %s", report.to_json())

    @contextmanager
    def _client(self, api: AirflowApi | None = None) -> Iterator[AirflowApi]:
        """``api`` when the caller holds the round's client, else a new one, closed after (unless ``close_api`` is False)."""
        if api is not None:
            yield api
            return
        api = self._api_factory()
        try:
            yield api
        finally:
            if self._close_api:
                api.close()

    def loop(
        self, stop: threading.Event, interval: float | None = None, wake: threading.Event | None = None
    ) -> None:
        """Drain jobs every ``interval`` seconds (or when ``wake`` is set) until ``stop`` is set. Never raises."""
        interval = interval if interval is not None else interval_seconds()
        while not stop.is_set():
            try:
                self.drain()
            except Exception as exc:  # the next round tries again; the job's lease makes it safe
                log.warning("airflow-retry-provider: replay driver round failed: %s", redact(str(exc))[:500])
            if wake is not None:
                wake.wait(interval)
                wake.clear()
            else:
                stop.wait(interval)

    def _tell_if_failed(self, view: JobView | None) -> None:
        """A job that ended with letters not cleared is announced (the alerts tell someone; never raises)."""
        if view is not None and any(outcome not in ITEM_CLEARED for outcome in view.counts):
            announce.tell(JobFailed(self.jobs.db, view.job, view.counts))

    # -- one job ---------------------------------------------------------------------------

    def _drive(
        self,
        turn: JobTurn | None,
        progress: Progress | None,
        reported: int,
        deadline: float | None = None,
        client: AirflowApi | None = None,
    ) -> Step:
        """Work the job claimed (``turn``) letter by letter: each turn read in one store call, the stop rule
        asked, the letter claimed and cleared, its outcome recorded with the next turn's read (the
        turn that finds none left ends the job). Says why the driver left the job."""
        assert turn is not None
        job = turn.job
        request = request_of(job)
        with self._client(client) as api:
            try:
                total = turn.total
                done = reported

                def report(result: ReplayResult) -> None:
                    nonlocal done
                    done += 1
                    if progress is not None:
                        progress(result, done, total)

                while turn is not None:  # None: cancelled, stopped, or another driver took it over
                    job, item = turn.job, turn.next_item
                    if turn.ended is not None:  # none left: the store ended the job with this turn
                        self._tell_if_failed(turn.ended)
                        return Step.ENDED if turn.another_waits else Step.ALL_ENDED
                    if job.in_canary:
                        step = self._canary(api, job, request, report, deadline)
                        if step is not Step.GO:
                            return step
                        turn = self.jobs.turn(job.id, self.owner, self.lease_seconds)
                        continue
                    if self._stop_rule(job, turn.failures):
                        return Step.STOPPED
                    assert item is not None  # none left: the turn ended the job, or the stop rule stopped it
                    if deadline is not None and time.monotonic() >= deadline:
                        self.jobs.release(job.id, self.owner)
                        return Step.DEADLINE
                    step = self._wait_for_step(job, deadline) if job.paced_since is not None else Step.GO
                    if step is not Step.GO:
                        return step
                    result = self._letter(api, job, item, turn.letter, request, deadline)
                    if isinstance(result, Step):
                        return result
                    turn = self.jobs.turn(job.id, self.owner, self.lease_seconds, done=(item, result))
                    report(result)
                return Step.LOST
            except BaseException:
                self.jobs.release(job.id, self.owner)
                raise

    def _canary(
        self,
        api: AirflowApi,
        job: ReplayJob,
        request: ReplayRequest,
        report: Callable[[ReplayResult], None],
        deadline: float | None,
    ) -> Step:
        """Clear the canary (once) and wait for its outcome; ``GO`` when it resolved and the rest may follow."""
        item = self.jobs.require(job.id).canary
        assert item is not None
        if item.outcome == ItemOutcome.PENDING:
            result = self._letter(api, job, item, self.store.get(item.letter_id), request, deadline)
            if isinstance(result, Step):
                return result
            self.jobs.turn(job.id, self.owner, self.lease_seconds, done=(item, result))
            report(result)
        self.jobs.wait_for_canary(job.id, self.owner, self.canary_timeout)
        while True:
            canary = self.jobs.canary(job.id)
            assert canary is not None
            verdict = canary_verdict(canary, self.canary_timeout)
            if verdict.verdict is Canary.PASSED:
                return Step.GO if self.jobs.pass_canary(job.id, self.owner) else Step.LOST
            if verdict.verdict is not Canary.WAIT:  # failed, or undecided past its deadline
                self._stop(job, verdict.reason)
                return Step.STOPPED
            step = self._nap(job, self.canary_poll, deadline, longest=self.canary_poll, stop_rule=False)
            if step is not Step.GO:
                return step
            self._ask_airflow(api, canary.letter_id)

    def _ask_airflow(self, api: AirflowApi, letter_id: int) -> None:
        """Decide the canary's letter from Airflow's state now (one REST call, whatever else is replaying); never raises."""
        try:
            OutcomeSync(self.store, api, replay_cap=self.engine.replay_cap).sync_letter(
                letter_id, source="driver"
            )
        except Exception as exc:  # the next look asks again; the canary's deadline bounds the wait
            log.warning("airflow-retry-provider: driver could not ask Airflow: %s", redact(str(exc))[:500])

    def _wait_for_step(self, job: ReplayJob, deadline: float | None) -> Step:
        """Wait for the job's rising pace (its step's clears per minute); ``GO``, or why the job stops here.

        Past the steps the deployment's pace is the only wait, taken with the claim (``claim_paced``),
        so a job that had a canary clears as soon after its last clear as one that had none.
        """
        while True:
            step_clears, since_clear = self.jobs.pace(job.id)
            rate = step_rate(step_clears, self.engine.rate_per_minute, self.pace_steps)
            wait = 60.0 / rate - since_clear if rate < self.engine.rate_per_minute else 0.0
            if wait <= 0:
                return Step.GO
            step = self._nap(job, wait, deadline)
            if step is not Step.GO:
                return step

    def _nap(
        self,
        job: ReplayJob,
        wait: float,
        deadline: float | None,
        longest: float = MAX_PACE_NAP,
        stop_rule: bool = True,
    ) -> Step:
        """Wait ``wait`` seconds (``longest`` at most) holding the job; ``GO``, or why the job stops here: the
        deadline comes first (the job is released for another driver), the lease was lost, or the stop rule says so."""
        if deadline is not None and time.monotonic() + wait >= deadline:
            self.jobs.release(job.id, self.owner)
            return Step.DEADLINE
        self._sleep(min(wait, longest))
        turn = self.jobs.turn(job.id, self.owner, self.lease_seconds)
        if turn is None:
            return Step.LOST
        return Step.STOPPED if stop_rule and self._stop_rule(job, turn.failures) else Step.GO

    def _stop_rule(self, job: ReplayJob, failures: int) -> bool:
        """``decide.STOP_AFTER_FAILURES`` of the job's replays failed in a row (``failures``): stop it here (True)."""
        reason = stop_rule(failures)
        if reason is None:
            return False
        self._stop(job, reason)
        return True

    def _stop(self, job: ReplayJob, reason: str) -> None:
        """Stop the job (its unclaimed letters stay in ``dlq``) and announce it."""
        view = self.jobs.stop(job.id, self.owner, reason)
        if view is not None:
            log.warning("airflow-retry-provider: replay job %s stopped: %s", job.id, redact(reason)[:500])
            self._tell_if_failed(view)

    def _letter(
        self,
        api: AirflowApi,
        job: ReplayJob,
        item: JobItem,
        letter: Letter | None,
        request: ReplayRequest,
        deadline: float | None,
    ) -> ReplayResult | Step:
        """Claim (after waiting for the pace) and clear one letter (``letter``: the item's, read with its
        turn); its result, or why the job stops here."""
        if item.replay_id is not None:
            return ReplayResult(
                item.letter_id,
                ItemOutcome.UNKNOWN,
                item.replay_id,
                "the driver stopped during this letter's clear; the sync decides from Airflow's state",
            )
        if letter is None:
            return ReplayResult(item.letter_id, ItemOutcome.REFUSED, detail="the letter no longer exists")
        while True:
            claim = self.engine.claim_paced(letter, request, job_id=job.id, position=item.position)
            if claim.replay_id is not None or claim.wait == 0:
                break
            step = self._nap(job, claim.wait, deadline)
            if step is not Step.GO:
                return step
        if claim.replay_id is None:
            return self._not_claimed(job, item)
        try:
            return self.engine.clear(api, letter, claim.replay_id, request, job.id)
        except Exception as exc:  # clear() records Airflow's errors itself; anything else: the clear may or may not have happened
            detail = redact(f"clear interrupted: {type(exc).__name__}: {exc}")[:1000]
            self.store.mark_replay_unknown(claim.replay_id, detail)
            return ReplayResult(letter.id, ItemOutcome.UNKNOWN, claim.replay_id, detail)

    def _not_claimed(self, job: ReplayJob, item: JobItem) -> ReplayResult:
        """Why a letter of the job could not be claimed: cleared with an earlier one, or not replayable."""
        letter = self.store.get(item.letter_id)
        if letter is None:
            return ReplayResult(item.letter_id, ItemOutcome.REFUSED, detail="the letter no longer exists")
        claim = self.store.open_replay(letter.id)
        if claim is not None and claim.job_id == job.id:
            return ReplayResult(
                letter.id, ItemOutcome.INCLUDED, claim.id, "cleared downstream of an earlier letter"
            )
        why = claim_refusal(letter.status, letter.replay_count, self.engine.replay_cap)
        # a dlq letter under the cap lost its claim to a concurrent one: said as before, the cap's words
        return ReplayResult(
            letter.id, ItemOutcome.REFUSED, detail=why or f"replay cap reached ({letter.replay_count})"
        )


def replay_and_wait(
    engine: ReplayEngine,
    request: ReplayRequest,
    ids: Sequence[int] | None = None,
    where: LetterFilter | None = None,
    limit: int = DEFAULT_SELECTION_LIMIT,
    progress: Progress | None = None,
    canary: bool | int = False,
) -> ReplayReport:
    """Submit a job for the selection and drive it here until it is done (or another process does).

    Letters that cannot be replayed are reported ``refused``; with none replayable no job is made.
    ``canary``: True clears the newest letter first and waits for its outcome; a letter id, that one.
    """
    ready, refused = engine.split(engine.select(ids, where, limit))
    refusals = tuple(ReplayResult(r.letter_id, ItemOutcome.REFUSED, detail=r.reason) for r in refused)
    if not ready:
        return ReplayReport(refusals)
    api = engine.require_api()
    driver = ReplayDriver(engine, lambda: api, close_api=False)
    job_id = driver.submit(request, ready, canary)
    driver.run_job(job_id, progress)
    return ReplayReport(tuple(driver.results(job_id)) + refusals, job_id)
