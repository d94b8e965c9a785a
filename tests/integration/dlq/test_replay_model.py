"""The whole replay loop as a model (Hypothesis stateful): under faults no promise breaks, and every state ends.

Real parts: the store, the replay engine, two replay drivers, the job store, the outcome sync and
the sweeper's task (``run_sweeper``), on the session's PostgreSQL. Airflow is
``tests/local_airflow.py`` (``fault_airflow``), a local server that the real ``AirflowApi`` client talks to: it answers
any task state, refuses (409, 500), times out, or loses its answer after acting. Each process of
the deployment (two api-server drivers, the sweeper, the workers' callbacks, a person at the UI)
can be killed at its n-th transaction or right after Airflow acted on its clear: nothing of it
runs after that, not even its ``finally``. Time passing is the database's leases moving into the
past. After every step the promises hold; at the end the faults stop, the tasks still cleared
finish, and after two sweeps every letter is out of ``replaying`` and no job is left open.

``HYPOTHESIS_PROFILE=long`` runs it with many more examples and longer runs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from psycopg import sql

from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.dlq.driver import ReplayDriver
from airflow_retry_provider.dlq.models import ReplayRequest, split_replayable
from airflow_retry_provider.dlq.replay import ReplayEngine
from airflow_retry_provider.dlq.store import DeadLetterStore, JobError, JobStore
from airflow_retry_provider.dlq.sweeper import run_sweeper
from airflow_retry_provider.hooks.airflow_api import AirflowApi, AirflowApiError, ApiCredentials
from tests.factories import new_letter
from tests.hypothesis_profiles import bounded
from tests.local_airflow import FAULT_DAG, FAULTS, UNFINISHED, ClearRequest, FaultAirflow, fault_airflow

CAP = 3
LEASE_SECONDS = 120  # at least 3 x the default API timeout, as settings require
RATE_PER_MINUTE = 6000  # 10 ms between clears: the pace is tested elsewhere, here it only orders them
FAULT_TIMEOUT = 0.5  # the clients' timeout while Airflow misbehaves (a "timeout" outlasts it)
CALM_TIMEOUT = 30.0  # once the faults stop, no answer is late
OPEN = ("pending", "unknown")
SETTLED = ("dlq", "resolved", "parked", "dismissed")
ENDS = ("success", "failed", "upstream_failed", "skipped", "removed")
ACTIONS = ("die", "cancel", "park", "dismiss", "time", "other-driver", "lease-lost", "sweep")
SHAPES = {  # a new DAG run: the state of a and of b (downstream of a), and which fail with a letter
    "a-failed": {"a": "failed", "b": "upstream_failed"},
    "both-failed": {"a": "failed", "b": "failed"},  # b's trigger rule is all_done
    "b-failed": {"a": "success", "b": "failed"},
}

TRUNCATE = "TRUNCATE {} RESTART IDENTITY CASCADE"
PROVIDER_TABLES = """
SELECT tablename FROM pg_tables
WHERE schemaname = current_schema() AND tablename LIKE 'retry%%' AND tablename <> 'retry_provider_schema_version'
"""
LETTERS = "SELECT id, run_id, task_id, status, try_number, replay_count FROM retry_dead_letters ORDER BY id"
REPLAYS = "SELECT id, letter_id, job_id, outcome, cleared_at FROM retry_replays ORDER BY id"
ITEMS = "SELECT job_id, position, letter_id, outcome, replay_id FROM retry_replay_job_items ORDER BY job_id, position"
JOBS = """
SELECT id, status, lease_until IS NOT NULL AND lease_until > clock_timestamp() AS live
FROM retry_replay_jobs ORDER BY id
"""
OPEN_JOBS = "SELECT id FROM retry_replay_jobs WHERE status IN ('queued', 'running') ORDER BY id"
# time passes: past every lease (the code reads them with clock_timestamp()) and the sync's grace
TIME_STEP = timedelta(minutes=3)
AGE_REPLAY_LEASES = (
    "UPDATE retry_replays SET lease_until = lease_until - %(by)s WHERE lease_until IS NOT NULL"
)
AGE_JOB_LEASES = (
    "UPDATE retry_replay_jobs SET lease_until = lease_until - %(by)s WHERE lease_until IS NOT NULL"
)


class ProcessDied(BaseException):
    """The process was killed: what it was doing stops here, and nothing it would have written is written."""


@dataclass(frozen=True)
class Interrupt:
    """Something else happens while a process works: at its ``at``-th transaction, or around its clear.

    ``at`` -1: while its clear is on the way, before Airflow acts on it; 0: right after Airflow acted
    on it (answered or not), before the process records what it heard.
    """

    at: int
    action: str
    pick: int


interrupts = (
    st.builds(Interrupt, st.integers(-1, 12), st.sampled_from(ACTIONS), st.integers(0, 20)) | st.none()
)


class ModelApi(AirflowApi):
    """The real client; around each clear (answered or not) its process may be interrupted."""

    around_clear: Callable[[int], None] = staticmethod(lambda at: None)

    def clear_task_instance(self, *args: Any, **kwargs: Any) -> Any:
        sent = not kwargs.get("dry_run", True)
        if sent:
            self.around_clear(-1)
        try:
            return super().clear_task_instance(*args, **kwargs)
        finally:
            if sent:
                self.around_clear(0)


class Process:
    """One process of the deployment: its own connections and API client; it can be interrupted or killed."""

    def __init__(self, model: ReplayModel, name: str) -> None:
        self.model = model
        self.name = name
        self.generation = 0
        self.interrupt: Interrupt | None = None
        self.transactions = 0
        self.restart()

    def restart(self) -> None:
        """A new process in its place (a new lease owner); the dead one's leases stay until they expire."""
        self.generation += 1
        self.dead = False
        self.store = DeadLetterStore(ProviderDatabase(self._connect))
        self.api = self.new_api()

    @property
    def owner(self) -> str:
        return f"{self.name}-{self.generation}"

    def new_api(self) -> ModelApi:
        api = ModelApi(ApiCredentials(self.model.base_url, "admin", "admin"), timeout=self.model.timeout)
        api.around_clear = self._around_clear
        return api

    def driver(self) -> ReplayDriver:
        engine = ReplayEngine(
            self.store,
            self.api,
            replay_cap=CAP,
            rate_per_minute=RATE_PER_MINUTE,
            lease_seconds=LEASE_SECONDS,
        )
        return ReplayDriver(engine, lambda: self.api, close_api=False, owner=self.owner)

    def run(self, work: Callable[[], object], interrupt: Interrupt | None = None) -> bool:
        """Do ``work`` (restarted first if it was killed); False when it was killed during it."""
        if self.dead:
            self.restart()
        self.interrupt, self.transactions = interrupt, 0
        try:
            work()
            return True
        except ProcessDied:
            return False
        finally:
            self.interrupt = None

    def _connect(self) -> Any:
        if self.dead:
            raise ProcessDied(self.owner)
        self.transactions += 1
        if self.interrupt is not None and self.interrupt.at == self.transactions:
            self._fire()
        return self.model.connect()

    def _around_clear(self, at: int) -> None:
        if self.interrupt is not None and self.interrupt.at == at:
            self._fire()

    def _fire(self) -> None:
        interrupt, self.interrupt = self.interrupt, None
        assert interrupt is not None
        if interrupt.action == "die":
            self.dead = True
            raise ProcessDied(self.owner)
        self.model.world(interrupt, self)


class ReplayModel(RuleBasedStateMachine):
    """The deployment and what may happen to it, step by step; the promises are checked after each step."""

    def __init__(self, dsn: str, base_url: str, fake: FaultAirflow) -> None:
        super().__init__()
        self.dsn, self.base_url, self.fake = dsn, base_url, fake
        self.timeout = FAULT_TIMEOUT
        fake.reset()
        fake.client_timeout = FAULT_TIMEOUT
        with psycopg.connect(dsn, autocommit=True) as conn:
            tables = [row[0] for row in conn.execute(PROVIDER_TABLES).fetchall()]
            conn.execute(sql.SQL(TRUNCATE).format(sql.SQL(", ").join(map(sql.Identifier, tables))))
        self.db = psycopg.connect(dsn, autocommit=True)
        self.runs = 0
        self.drivers = [Process(self, "api-server-1"), Process(self, "api-server-2")]
        self.sweeper = Process(self, "sweeper")
        self.person = Process(self, "ui")
        self.worker = Process(self, "worker")
        self.stepping = False  # a step that raised leaves this set: the final check is not run then

    def connect(self) -> Any:
        # a lock a process would hold while another waits for it is a bug of the model: fail, not hang
        return psycopg.connect(self.dsn, options="-c lock_timeout=10s")

    # -- the world: what happens to the deployment ---------------------------------------------

    def letters(self) -> list[dict[str, Any]]:
        return self._rows(LETTERS)

    def _rows(self, statement: str) -> list[dict[str, Any]]:
        cur = self.db.execute(statement)
        names = [c.name for c in cur.description or ()]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def world(self, interrupt: Interrupt, busy: Process) -> None:
        """What happens while ``busy`` works (nested: nothing else interrupts it)."""
        action, pick = interrupt.action, interrupt.pick
        if action == "cancel":
            self.cancel(pick)
        elif action in ("park", "dismiss"):
            self.decide(action, pick)
        elif action == "time":
            self.time_passes()
        elif action in ("other-driver", "lease-lost"):  # lease-lost: busy's leases expire first
            if action == "lease-lost":
                self.time_passes()
            other = next(p for p in self.drivers if p is not busy)
            other.run(lambda: other.driver().drain())
        elif action == "sweep" and busy is not self.sweeper:
            self.sweep()

    def cancel(self, pick: int) -> None:
        jobs = [row["id"] for row in self._rows(OPEN_JOBS)]
        if jobs:
            job_id = jobs[pick % len(jobs)]

            def cancel() -> None:
                try:
                    JobStore(self.person.store.db).cancel(job_id, "ana")
                except JobError:  # finished meanwhile: the UI says so
                    pass

            self.person.run(cancel)

    def decide(self, action: str, pick: int) -> None:
        letters = self.letters()
        if letters:
            letter_id = letters[pick % len(letters)]["id"]
            if action == "park":
                self.person.run(lambda: self.person.store.park([letter_id], "ana", "vendor ticket 7"))
            else:
                self.person.run(lambda: self.person.store.dismiss([letter_id], "ana", "obsolete feed"))

    def time_passes(self) -> None:
        self.db.execute(AGE_REPLAY_LEASES, {"by": TIME_STEP})
        self.db.execute(AGE_JOB_LEASES, {"by": TIME_STEP})
        self.fake.age(TIME_STEP)

    def sweep(self, interrupt: Interrupt | None = None) -> bool:
        """The sweeper DAG's task, on its own store and a fresh client; True when it checked everything."""
        checked = []

        def sweep() -> None:
            try:
                run_sweeper(self.sweeper.store, self.sweeper.new_api(), grace=timedelta(0), drain_seconds=120)
                checked.append(True)
            except (RuntimeError, AirflowApiError):  # Airflow did not answer everything: the task fails
                pass

        self.sweeper.run(sweep, interrupt)
        return bool(checked)

    def callback(self, run_id: str, task_id: str, state: str, try_number: int) -> None:
        """The worker's failure or success callback for a try that just ended."""
        store = self.worker.store
        if state == "failed":
            letter = new_letter(
                dag_id=FAULT_DAG, run_id=run_id, task_id=task_id, try_number=try_number, fingerprint="f" * 16
            )
            self.worker.run(lambda: store.file(letter, CAP))
        elif state == "success":
            self.worker.run(lambda: store.resolve_replaying(FAULT_DAG, run_id, task_id, -1))

    def _tis(self, states: tuple[str | None, ...]) -> list[tuple[str, str]]:
        with self.fake.lock:
            return [key for key, ti in sorted(self.fake.tis.items()) if ti.state in states]

    # -- steps -----------------------------------------------------------------------------------

    def _begin(self) -> None:
        self.stepping = True

    @rule(shape=st.sampled_from(sorted(SHAPES)), delivered=st.booleans())
    def a_dag_run_fails(self, shape: str, delivered: bool) -> None:
        """A new DAG run ends with failures; their callbacks file letters (or die: the sweeper files them)."""
        self._begin()
        self.runs += 1
        run_id = f"run-{self.runs}"
        self.fake.add_run(run_id, SHAPES[shape])
        if delivered:
            for task_id, state in SHAPES[shape].items():
                self.callback(run_id, task_id, state, 1)

    @precondition(lambda self: self.runs > 0)
    @rule(picks=st.lists(st.integers(0, 20), min_size=1, max_size=4), downstream=st.booleans())
    def a_person_starts_a_job(self, picks: list[int], downstream: bool) -> None:
        """Someone replays a selection from the UI: the replayable letters become a queued job."""
        self._begin()
        letters = self.letters()
        if not letters:
            return
        ids = sorted({letters[pick % len(letters)]["id"] for pick in picks})
        engine = ReplayEngine(self.person.store, replay_cap=CAP, rate_per_minute=RATE_PER_MINUTE)
        ready, _ = split_replayable(engine.select(ids), CAP)
        if ready:
            request = ReplayRequest("ana", "vendor fixed the feed", "v2", downstream=downstream, source="ui")
            self.person.run(lambda: JobStore(self.person.store.db).create(request, ready))

    @rule(which=st.integers(0, 1), interrupt=interrupts)
    def a_driver_drains(self, which: int, interrupt: Interrupt | None) -> None:
        """An api-server worker's driver settles open claims and works the open jobs."""
        self._begin()
        process = self.drivers[which]
        process.run(lambda: process.driver().drain(), interrupt)

    @rule(interrupt=interrupts)
    def the_sweeper_runs(self, interrupt: Interrupt | None) -> None:
        """The sweeper DAG files, syncs, resolves and drains."""
        self._begin()
        self.sweep(interrupt)

    @rule(pick=st.integers(0, 20))
    def a_person_cancels_a_job(self, pick: int) -> None:
        self._begin()
        self.cancel(pick)

    @rule(action=st.sampled_from(["park", "dismiss"]), pick=st.integers(0, 20))
    def a_person_parks_or_dismisses(self, action: str, pick: int) -> None:
        self._begin()
        self.decide(action, pick)

    @rule(pick=st.integers(0, 20))
    def a_cleared_task_starts(self, pick: int) -> None:
        """The scheduler starts the next try of a cleared task instance."""
        self._begin()
        cleared = self._tis((None,))
        if cleared:
            self.fake.start(*cleared[pick % len(cleared)])

    @rule(pick=st.integers(0, 20), state=st.sampled_from(ENDS), delivered=st.booleans())
    def a_cleared_task_ends(self, pick: int, state: str, delivered: bool) -> None:
        """A cleared task instance's next try ends in any state; its callback runs (or its worker dies first)."""
        self._begin()
        unfinished = self._tis(UNFINISHED)
        if unfinished:
            run_id, task_id = unfinished[pick % len(unfinished)]
            ti = self.fake.end(run_id, task_id, state)
            if delivered:
                self.callback(run_id, task_id, state, ti.try_number)

    @rule(pick=st.integers(0, 20), state=st.sampled_from(["failed", "skipped"]))
    def a_person_marks_a_cleared_task(self, pick: int, state: str) -> None:
        """Someone sets a cleared task instance's state by hand in Airflow: same try, no callback."""
        self._begin()
        cleared = self._tis((None,))
        if cleared:
            self.fake.mark(*cleared[pick % len(cleared)], state)

    @precondition(lambda self: self.runs > 0)
    @rule(pick=st.integers(0, 20))
    def a_dag_run_is_deleted(self, pick: int) -> None:
        """Someone deletes a DAG run: Airflow answers 404 for its task instances."""
        self._begin()
        self.fake.delete_run(f"run-{pick % self.runs + 1}")

    @rule(plan=st.lists(st.sampled_from(FAULTS), min_size=1, max_size=4))
    def airflow_misbehaves(self, plan: list[str]) -> None:
        """Airflow's next answers: refused, failed, timed out or lost after acting."""
        self._begin()
        with self.fake.lock:
            self.fake.plan[:] = plan

    @rule(down=st.booleans())
    def airflow_goes_down_or_up(self, down: bool) -> None:
        """Airflow's API answers 500 to everything (or recovers)."""
        self._begin()
        self.fake.down = down

    @rule()
    def time_passes_past_every_lease(self) -> None:
        self._begin()
        self.time_passes()

    # -- the promises, after every step --------------------------------------------------------

    @invariant()
    def promises_hold(self) -> None:
        """No job item clears twice; a job's counts add up; a letter's status agrees with its replays."""
        with self.fake.lock:
            clears = tuple(self.fake.clears)
            states = {key: ti.state for key, ti in self.fake.tis.items()}
        seen = Snapshot(
            letters={row["id"]: row for row in self.letters()},
            replays={row["id"]: row for row in self._rows(REPLAYS)},
            items=self._rows(ITEMS),
            jobs={row["id"]: row for row in self._rows(JOBS)},
            clears=clears,
            states=states,
        )
        one_clear_per_job_item(seen)
        job_counts_add_up(seen)
        outcomes_tell_the_truth(seen)
        letters_agree_with_their_replays(seen)
        self.stepping = False

    # -- the end: the faults stop, the cleared tasks finish, two sweeps run ---------------------

    def teardown(self) -> None:
        try:
            if not self.stepping:
                self.settle_everything()
        finally:
            self.db.close()

    def settle_everything(self) -> None:
        """After the faults stop and two sweeps, nothing is left replaying or running, as the state table says."""
        with self.fake.lock:
            self.fake.plan.clear()
            self.fake.down = False
        self.fake.client_timeout = self.timeout = CALM_TIMEOUT
        for process in (*self.drivers, self.sweeper, self.person, self.worker):
            process.restart()
        for n in (1, 2):
            for index, (run_id, task_id) in enumerate(self._tis(UNFINISHED)):
                end = ("success", "failed")[index % 2]
                ti = self.fake.end(run_id, task_id, end)
                self.callback(run_id, task_id, end, ti.try_number)
            self.time_passes()
            assert self.sweep(), f"sweep {n} after the faults stopped did not check everything"
        self.promises_hold()
        letters = self.letters()
        stuck = [(row["id"], row["status"]) for row in letters if row["status"] not in SETTLED]
        assert not stuck, f"letters not settled after two sweeps: {stuck}"
        jobs = self._rows(JOBS)
        open_jobs = [row for row in jobs if row["status"] in ("queued", "running") and not row["live"]]
        assert not open_jobs, f"jobs open without a live lease: {open_jobs}"
        pending = [row for row in self._rows(ITEMS) if row["outcome"] == "pending"]
        assert not pending, f"job items still pending after two sweeps: {pending}"
        with self.fake.lock:
            tis = {key: (ti.state, ti.try_number) for key, ti in self.fake.tis.items()}
        for row in letters:
            state, try_number = tis.get((row["run_id"], row["task_id"]), ("gone", 0))
            if state == "success":
                assert row["status"] in ("resolved", "dismissed"), (
                    f"letter {row['id']} {row['status']}, task succeeded"
                )
            if state == "failed":
                assert row["try_number"] == try_number, (
                    f"letter {row['id']} at try {row['try_number']}, failed {try_number}"
                )


# -- the promises ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    """The provider's tables and what Airflow saw, read between two steps."""

    letters: dict[int, dict[str, Any]]
    replays: dict[int, dict[str, Any]]
    items: list[dict[str, Any]]
    jobs: dict[int, dict[str, Any]]
    clears: tuple[ClearRequest, ...]
    states: dict[tuple[str, str], str | None]

    @property
    def sent(self) -> Counter[int]:
        """Clear requests per replay (its id is in the clear's note)."""
        return Counter(clear.replay_id for clear in self.clears if clear.replay_id is not None)

    @property
    def acted(self) -> set[int | None]:
        """The replays whose clear Airflow carried out."""
        return {clear.replay_id for clear in self.clears if clear.acted}

    def sent_for(self, job_id: int, letter_id: int) -> list[int]:
        return [
            r
            for r in self.sent
            if self.replays[r]["job_id"] == job_id and self.replays[r]["letter_id"] == letter_id
        ]


def one_clear_per_job_item(seen: Snapshot) -> None:
    """A replay sends one clear at most, so a job item clears its task instance once."""
    assert all(n == 1 for n in seen.sent.values()), f"a replay's clear was sent twice: {seen.sent}"
    for item in seen.items:
        sent = seen.sent_for(item["job_id"], item["letter_id"])
        assert len(sent) <= 1, f"job item {item} sent {len(sent)} clears (replays {sent})"


def job_counts_add_up(seen: Snapshot) -> None:
    """Every job has items, each with one outcome; a done job has none pending."""
    for job_id, job in seen.jobs.items():
        counts = Counter(item["outcome"] for item in seen.items if item["job_id"] == job_id)
        assert counts, f"job {job_id} has no items"
        if job["status"] == "done":
            assert counts["pending"] == 0, f"job {job_id} is done with items pending: {dict(counts)}"


def outcomes_tell_the_truth(seen: Snapshot) -> None:
    """What a job or a replay says happened did: cleared was cleared; abandoned, clear-failed and cancelled were not."""
    for item in seen.items:
        if item["outcome"] == "cancelled":
            sent = seen.sent_for(item["job_id"], item["letter_id"])
            assert not sent, f"job item {item} was reported left in dlq, but its clear was sent"
        if item["outcome"] == "cleared":
            assert item["replay_id"] in seen.acted, f"job item {item} says cleared; Airflow never cleared it"
    for replay in seen.replays.values():
        if replay["outcome"] in ("abandoned", "clear-failed"):
            assert replay["id"] not in seen.acted and replay["cleared_at"] is None, (
                f"replay {replay['id']} is {replay['outcome']}, but Airflow cleared it"
            )


def letters_agree_with_their_replays(seen: Snapshot) -> None:
    """``replaying`` exactly when the last replay is open; succeeded means resolved; a replayed task that runs is not in dlq."""
    last = {replay["letter_id"]: replay["outcome"] for replay in seen.replays.values()}  # in id order
    open_ones = Counter(r["letter_id"] for r in seen.replays.values() if r["outcome"] in OPEN)
    assert all(n == 1 for n in open_ones.values()), f"letters with two open replays: {open_ones}"
    for letter_id, letter in seen.letters.items():
        outcome = last.get(letter_id)
        status = letter["status"]
        assert (status == "replaying") == (outcome in OPEN), (
            f"letter {letter_id} is {status}, its replay {outcome}"
        )
        if outcome == "succeeded":
            assert status == "resolved", f"letter {letter_id}'s replay succeeded, but it is {status}"
        key = (letter["run_id"], letter["task_id"])
        own = [c.replay_id for c in seen.clears if c.acted and (c.run_id, c.task_id) == key]
        last_clear = seen.replays.get(own[-1]) if own and own[-1] is not None else None
        if (
            last_clear is not None
            and last_clear["letter_id"] == letter_id
            and seen.states.get(key, "gone") in UNFINISHED
        ):
            assert status != "dlq", f"letter {letter_id} is in dlq while its replayed task instance runs"


@pytest.fixture
def fake_airflow(monkeypatch) -> Iterator[tuple[str, FaultAirflow]]:
    """The fake Airflow; the sweeper's own engine reads the model's pace, lease and cap from the settings."""
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__REPLAY_RATE_PER_MINUTE", str(RATE_PER_MINUTE))
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__REPLAY_LEASE_SECONDS", str(LEASE_SECONDS))
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__REPLAY_MAX_ATTEMPTS", str(CAP))
    with fault_airflow(FAULT_TIMEOUT) as served:
        yield served


def test_the_replay_loop_keeps_its_promises_under_faults(pg_dsn, fake_airflow):
    """Any sequence of filings, jobs, drives, cancels, decisions, task outcomes, faults and deaths keeps every promise, and ends settled."""
    base_url, fake = fake_airflow
    run_state_machine_as_test(
        lambda: ReplayModel(pg_dsn, base_url, fake),  # type: ignore[arg-type]  # any factory of machines
        settings=settings(
            bounded(max_examples=25, stateful_step_count=30),
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


# -- the cases, as fixed runs of the same model ------------------------------------------


@pytest.fixture
def model(pg_dsn, fake_airflow) -> ReplayModel:
    """A fresh run of the model (steps are called by hand; ``settle`` ends it)."""
    return ReplayModel(pg_dsn, *fake_airflow)


def settle(model: ReplayModel, *steps: Callable[[], object]) -> dict[str, str]:
    """Run ``steps`` with the promises checked after each, then the end (faults stop, two sweeps); each letter's status by task."""
    model.promises_hold()
    for step in steps:
        step()
        model.promises_hold()
    model.teardown()
    with psycopg.connect(model.dsn) as conn:
        return dict(
            conn.execute("SELECT run_id || '/' || task_id, status FROM retry_dead_letters").fetchall()
        )


def test_a_replayed_downstream_whose_upstream_fails_again_ends_in_dlq(model):
    """A letter cleared downstream of its upstream's replay, left upstream_failed when the upstream fails again, goes back to dlq."""
    statuses = settle(
        model,
        lambda: model.a_dag_run_fails("both-failed", delivered=True),
        lambda: model.a_person_starts_a_job([0], downstream=True),  # a's letter: b's joins the clear
        lambda: model.a_driver_drains(0, None),
        lambda: model.a_cleared_task_ends(0, "failed", delivered=True),  # a fails again
        lambda: model.a_cleared_task_ends(0, "upstream_failed", delivered=False),  # so b never runs
    )
    assert statuses == {"run-1/a": "dlq", "run-1/b": "dlq"}


@pytest.mark.parametrize(
    "at",
    [
        -1,  # the clear is on its way: Airflow still shows the claimed try failed when the other settles
        0,  # Airflow has cleared: it shows the task instance cleared when the other settles
    ],
)
def test_a_lease_lost_during_a_clear_never_calls_the_clear_abandoned(model, at):
    """The driver's leases expire during its clear and another driver settles: the clear that happened is kept."""
    statuses = settle(
        model,
        lambda: model.a_dag_run_fails("a-failed", delivered=True),
        lambda: model.a_person_starts_a_job([0], downstream=False),
        lambda: model.a_driver_drains(0, Interrupt(at, "lease-lost", 0)),
        lambda: model.a_cleared_task_ends(0, "success", delivered=True),
    )
    assert statuses == {"run-1/a": "resolved"}


def test_parking_during_a_confirmed_replay_is_refused_and_the_success_resolves(model):
    """A person parks a letter whose confirmed clear is running: refused (nothing abandoned), and the success resolves it."""
    statuses = settle(
        model,
        lambda: model.a_dag_run_fails("a-failed", delivered=True),
        lambda: model.a_person_starts_a_job([0], downstream=False),
        lambda: model.a_driver_drains(0, None),
        lambda: model.a_person_parks_or_dismisses("park", 0),
        lambda: model.a_cleared_task_ends(0, "success", delivered=True),
    )
    assert statuses == {"run-1/a": "resolved"}


def test_a_parked_letter_whose_task_instance_succeeds_is_resolved(model):
    """b's letter is parked; a's replay clears b downstream and b succeeds: the sweep resolves the parked letter."""
    statuses = settle(
        model,
        lambda: model.a_dag_run_fails("both-failed", delivered=True),
        lambda: model.a_person_parks_or_dismisses("park", 1),
        lambda: model.a_person_starts_a_job([0], downstream=True),
        lambda: model.a_driver_drains(0, None),
        lambda: model.a_cleared_task_ends(0, "success", delivered=True),
        lambda: model.a_cleared_task_ends(0, "success", delivered=True),
    )
    assert statuses == {"run-1/a": "resolved", "run-1/b": "resolved"}


@pytest.mark.parametrize(
    "fault, end",
    [
        ("act_drop", "skipped"),  # the answer lost after Airflow cleared; the task is skipped
        ("timeout", "removed"),  # the client gave up after Airflow cleared; the task was removed
        ("act_500", "failed"),  # 500 after clearing; a person marks it failed by hand at the claimed try
    ],
)
def test_a_clear_whose_answer_was_lost_ends_as_airflow_says(model, fault, end):
    """A clear Airflow made but whose answer was lost, and whose task instance then ends without success, is a failed replay."""
    statuses = settle(
        model,
        lambda: model.a_dag_run_fails("a-failed", delivered=True),
        lambda: model.a_person_starts_a_job([0], downstream=False),
        lambda: model.airflow_misbehaves([fault]),
        lambda: model.a_driver_drains(1, None),
        lambda: (
            model.a_person_marks_a_cleared_task(0, end)
            if end == "failed"
            else model.a_cleared_task_ends(0, end, delivered=True)
        ),
    )
    assert statuses == {"run-1/a": "dlq"}


@pytest.mark.parametrize(
    "fault, unknown, acted",
    [
        ("ok", None, True),  # answered: no error
        ("409", False, False),  # refused: surely not done
        ("500", True, False),  # failed: the client cannot tell it was not done
        ("act_500", True, True),  # done, then 500
        ("act_drop", True, True),  # done, the connection closed without an answer
        ("timeout", True, True),  # done, the answer later than the client waits
    ],
)
def test_each_fault_of_the_fake_reaches_the_real_client_as_from_airflow(fake_airflow, fault, unknown, acted):
    """A fault of the fake Airflow is what the real client sees from a real one: an error, whether its outcome is unknown, and what was done."""
    base_url, fake = fake_airflow
    fake.add_run("r", {"a": "failed", "b": "upstream_failed"})
    fake.plan[:] = [fault]
    with AirflowApi(ApiCredentials(base_url, "admin", "admin"), timeout=FAULT_TIMEOUT) as api:
        try:
            cleared = api.clear_task_instance(
                FAULT_DAG, "r", "a", dry_run=False, note="airflow-retry replay #7 by ana"
            )
            error = None
        except AirflowApiError as exc:
            cleared, error = [], exc
    assert (error.outcome_unknown if error else None) == unknown
    assert [(c.task_id, c.state) for c in cleared] == (
        [("a", "failed"), ("b", "upstream_failed")] if not error else []
    )
    assert (fake.tis[("r", "a")].state is None) == acted and (fake.tis[("r", "b")].state is None) == acted
    assert [(c.replay_id, c.acted) for c in fake.clears] == [(7, acted)]
