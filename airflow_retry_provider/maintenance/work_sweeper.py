"""The work-unit sweeper: finish what a dead worker left ``running``, or park it for a person.

Rules (a payments system's background sweeper, applied to work units), followed in order by
:func:`decide`:

1. Only units left ``running`` past their lease are swept, when their next sweep is due.
2. A unit with no remote job id is still at its *create* step: its outcome is unknown and nothing
   can be looked up, so it is parked for a person, never resubmitted (a blind resubmit could run
   the work twice), and a letter says so.
3. A unit with a remote job id is looked up by that deterministic id (the ``lookup`` callable):
   a job that succeeded completes the unit; a job that failed fails it and files a letter; a job
   still running is left to run (looked at again after the interval, not counted as a failure).
4. A job that cannot be found, or a lookup that raises, is a failed sweep: the unit waits
   1 minute, then 2, 4, ... up to 1 hour; after ``max_attempts`` failed sweeps it is parked, a
   letter is filed and an alert goes out.
5. Every action goes into the unit's history (``retry_work_unit_history``).

Settings (``[retry_provider]``): ``work_sweeper_enabled`` (default ``false``),
``work_sweeper_interval_seconds`` (30), ``work_sweeper_max_attempts`` (10) and
``work_sweeper_lookup``: the dotted path of ``lookup(remote_job_id, unit) -> RemoteJob | None``
(None: the remote side has no such job).
"""

from __future__ import annotations

import importlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from airflow_retry_provider import announce, metrics, settings
from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.dlq import DeadLetterStore, LetterFiled, NewLetter, WorkUnitParked
from airflow_retry_provider.ledger.store import WorkUnit
from airflow_retry_provider.maintenance.sql import query
from airflow_retry_provider.policy import Backoff, Classification, classify, fingerprint, redact
from airflow_retry_provider.policy.text import storable, storable_value

log = logging.getLogger(__name__)

LOOKUP_KEY = "[retry_provider] work_sweeper_lookup"
#: Failed sweeps of one unit wait 1 minute, doubling up to 1 hour.
SWEEP_BACKOFF = Backoff(base=timedelta(minutes=1), multiplier=2, cap=timedelta(hours=1), jitter=0)
BATCH = 100

Lookup = Callable[[str, WorkUnit], Any]


@dataclass(frozen=True)
class SweeperSettings:
    """Whether the sweeper runs, how often, how many failed sweeps before parking, and the lookup."""

    enabled: bool = False
    interval_seconds: int = 30
    max_attempts: int = 10
    lookup_path: str | None = None

    @classmethod
    def from_settings(cls) -> SweeperSettings:
        """From ``[retry_provider] work_sweeper_*``; a bad value is an error naming the key."""
        return cls(
            enabled=settings.work_sweeper_enabled(),
            interval_seconds=settings.work_sweeper_interval_seconds(),
            max_attempts=settings.work_sweeper_max_attempts(),
            lookup_path=settings.work_sweeper_lookup() or None,
        )

    def lookup(self) -> Lookup | None:
        """The configured lookup callable, imported; None when not configured."""
        if not self.lookup_path:
            return None
        module, _, name = self.lookup_path.rpartition(".")
        try:
            found = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError, ValueError) as exc:
            raise ValueError(
                f"{LOOKUP_KEY}: cannot import {self.lookup_path!r} ({type(exc).__name__})"
            ) from None
        if not callable(found):
            raise ValueError(f"{LOOKUP_KEY}: {self.lookup_path!r} is not callable")
        return found


@dataclass(frozen=True)
class Action:
    """What the sweeper does with one unit: ``complete``, ``fail``, ``park``, ``wait`` or ``later``."""

    kind: str
    detail: str
    attempts: int
    result: Any = None
    delay_seconds: int = 0
    letter_reason: str | None = field(default=None)


def decide(
    unit: WorkUnit, attempts: int, job: Any, error: str | None, max_attempts: int, interval: int
) -> Action:
    """The sweeper's rules 2-4 for one stale unit (``attempts``: failed sweeps so far).

    :param job: the lookup's answer (a ``RemoteJob``; None when the job was not found), ignored
        for a unit at its create step.
    :param error: the lookup's error, if it raised (or no lookup is configured).
    """
    if unit.remote_job_id is None:  # rule 2
        why = (
            "left running past its lease at its create step (no remote job id): its outcome is unknown "
            "and a blind resubmit could run the work twice; a person must check and decide"
        )
        return Action("park", why, attempts, letter_reason=why)
    if error is None and job is not None:  # rule 3
        state = getattr(job, "state", None)
        if state == "succeeded":
            return Action(
                "complete",
                f"remote job {unit.remote_job_id} succeeded",
                attempts,
                result=getattr(job, "result", None),
            )
        if state == "failed":
            error_text = storable(str(getattr(job, "error", "") or "no error text"))
            why = f"remote job {unit.remote_job_id} failed: {redact(error_text)}"
            return Action("fail", why, attempts, letter_reason=why)
        return Action(
            "wait", f"remote job {unit.remote_job_id} is still {state}", attempts, delay_seconds=interval
        )
    attempts += 1  # rule 4
    problem = error or f"remote job {unit.remote_job_id} was not found"
    if attempts >= max_attempts:
        why = f"{problem}; parked after {attempts} failed sweeps: a person must check the remote side and decide"
        return Action("park", why, attempts, letter_reason=why)
    delay = int(SWEEP_BACKOFF.nominal(attempts).total_seconds())
    return Action(
        "later",
        f"{problem}; sweep {attempts} of {max_attempts} failed, next in {delay} s",
        attempts,
        delay_seconds=delay,
    )


def owner_parts(owner_ti: str | None) -> tuple[str, str, str, int] | None:
    """``dag_id/run_id/task_id/map_index`` split (a run id may hold ``/``); None when unknown."""
    if not owner_ti:
        return None
    parts = owner_ti.split("/")
    if len(parts) < 4 or not parts[-1].lstrip("-").isdigit():
        return None
    return parts[0], "/".join(parts[1:-2]), parts[-2], int(parts[-1])


def unit_letter(unit: WorkUnit, action: Action) -> NewLetter | None:
    """The letter for a parked or failed unit, filed against the task instance that held it."""
    owner = owner_parts(unit.owner_ti)
    if owner is None or action.letter_reason is None:
        return None
    dag_id, run_id, task_id, map_index = owner
    if action.kind == "fail":
        from airflow_retry_provider.operators.remote_jobs import RemoteJobFailed

        classification = classify(RemoteJobFailed(str(unit.remote_job_id), action.letter_reason))
    else:
        classification = Classification(
            "unknown", "unknown-outcome", "work-sweeper", "WorkUnitParked", action.letter_reason
        )
    try_number = unit.owner_try or 1
    return NewLetter(
        dag_id=dag_id,
        run_id=run_id,
        task_id=task_id,
        map_index=map_index,
        try_number=try_number,
        attempts_used=try_number,
        max_attempts=None,
        work_unit_key=unit.key,
        data_interval_start=None,
        data_interval_end=None,
        workspace_id=None,
        failure_class=classification.failure_class,
        category=classification.category,
        rule="work-sweeper",
        exception_type=classification.exception_type,
        message=redact(action.letter_reason)[:2000],
        reason=f"[work-unit sweeper] {action.letter_reason}"[:500],
        fingerprint=fingerprint(classification),
        filed_by="sweeper",
    )


class WorkSweeper:
    """Sweeps stale work units on the provider's database (see the module docstring).

    :param db: the provider's database (letters are filed through a ``DeadLetterStore`` on it).
    :param chosen: the sweeper's settings.
    :param lookup: overrides the configured lookup (``lookup(remote_job_id, unit)``).
    """

    def __init__(self, db: ProviderDatabase, chosen: SweeperSettings, lookup: Lookup | None = None) -> None:
        self.db = db
        self.letters = DeadLetterStore(db)
        self.settings = chosen
        self.lookup = lookup if lookup is not None else chosen.lookup()
        self.dedup_seconds = settings.ledger_dedup_seconds().total_seconds()

    def sweep_once(self) -> dict[str, list[str]]:
        """One pass over the due stale units; each in its own transaction. Keys by action."""
        done: dict[str, list[str]] = {}
        with self.db.transaction() as cur:
            cur.execute(query("stale_unit_keys"), {"limit": BATCH})
            keys = [row[0] for row in cur.fetchall()]
        for key in keys:
            try:
                kind = self._sweep_unit(key)
            except Exception as exc:  # one unit's error is logged and counted; the sweep goes on
                metrics.incr("work_sweeper", "error")
                log.warning(
                    "airflow-retry-provider: work unit %s not swept: %s",
                    key,
                    redact(f"{type(exc).__name__}: {exc}"),
                )
                kind = "error"
            if kind:
                done.setdefault(kind, []).append(key)
        return done

    def _sweep_unit(self, key: str) -> str | None:
        with self.db.transaction() as cur:
            cur.execute(query("lock_stale_unit"), {"key": key})
            rows = ProviderDatabase.rows(cur)
            if not rows:  # taken over by a worker, or swept by another sweeper meanwhile
                return None
            row = rows[0]
            unit = WorkUnit.from_row(row)
            job, error = self._look_up(unit)
            action = decide(
                unit,
                int(row["sweep_attempts"]),
                job,
                error,
                self.settings.max_attempts,
                self.settings.interval_seconds,
            )
            self._apply(cur, key, action)
            letter = unit_letter(unit, action)
        metrics.incr("work_sweeper", action.kind)
        log.info("airflow-retry-provider: work unit %s: %s (%s)", key, action.kind, action.detail)
        if letter is not None:
            result = self.letters.file(letter, replay_cap=1)
            if action.kind == "park":
                announce.tell(
                    WorkUnitParked(self.db, unit.key, unit.owner_ti, action.detail, result.letter_id)
                )
            else:
                announce.tell(LetterFiled(self.db, letter, result))
        return action.kind

    def _look_up(self, unit: WorkUnit) -> tuple[Any, str | None]:
        if unit.remote_job_id is None:
            return None, None
        if self.lookup is None:
            return None, f"no lookup configured ({LOOKUP_KEY}) to find remote job {unit.remote_job_id}"
        try:
            return self.lookup(unit.remote_job_id, unit), None
        except Exception as exc:  # the remote side is down or refuses: a failed sweep
            return (
                None,
                f"looking up remote job {unit.remote_job_id} failed: "
                + storable(redact(f"{type(exc).__name__}: {exc}"))[:300],
            )

    def _apply(self, cur: Any, key: str, action: Action) -> None:
        if action.kind in ("complete", "fail"):
            cur.execute(
                query("sweeper_finish_unit"),
                {
                    "key": key,
                    "status": "succeeded" if action.kind == "complete" else "failed",
                    "result_ref": json.dumps(storable_value(action.result)),
                    "error": None if action.kind == "complete" else action.detail[:2000],
                    "dedup_seconds": self.dedup_seconds,
                },
            )
        elif action.kind == "park":
            cur.execute(
                query("sweeper_park_unit"),
                {"key": key, "error": action.detail[:2000], "attempts": action.attempts},
            )
        else:
            cur.execute(
                query("sweeper_later"),
                {
                    "key": key,
                    "attempts": action.attempts,
                    "error": action.detail[:2000] if action.kind == "later" else None,
                    "delay_seconds": action.delay_seconds,
                },
            )
        history_action = {
            "complete": "completed",
            "fail": "failed",
            "park": "parked",
            "wait": "waiting",
            "later": "retry-later",
        }
        cur.execute(
            query("insert_unit_history"),
            {"key": key, "action": history_action[action.kind], "detail": action.detail},
        )

    def run(self, duration: timedelta, sleep: Callable[[float], None] = time.sleep) -> dict[str, int]:
        """Sweep every ``interval_seconds`` for ``duration`` (the looping task); counts per action."""
        totals: dict[str, int] = {}
        deadline = time.monotonic() + duration.total_seconds()
        while True:
            started = time.monotonic()
            for kind, keys in self.sweep_once().items():
                totals[kind] = totals.get(kind, 0) + len(keys)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return totals
            sleep(max(0.0, min(remaining, self.settings.interval_seconds - (time.monotonic() - started))))


def run_work_sweeper(duration: timedelta) -> dict[str, int]:
    """The sweeper DAG's looping task; skipped (AirflowSkipException) while the sweeper is disabled."""
    from airflow.sdk.exceptions import AirflowSkipException

    chosen = SweeperSettings.from_settings()
    if not chosen.enabled:
        raise AirflowSkipException(
            "the work-unit sweeper is off ([retry_provider] work_sweeper_enabled = false)"
        )
    return WorkSweeper(ProviderDatabase.from_conn_id(), chosen).run(duration)
