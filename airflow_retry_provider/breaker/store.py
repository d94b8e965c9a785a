"""The breakers in PostgreSQL: one row per dependency, changed only under that row's lock.

Each public method is one short transaction: lock the dependency's row (``SELECT ... FOR
UPDATE``; concurrent callers wait their turn), read the clock and the window from the database,
apply the pure transition of :mod:`airflow_retry_provider.policy.breaker`, write the row back
and record the transition. Two workers racing on one half-open breaker are serialised by the
lock: the first becomes the probe, the second sees the probe and is held.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from airflow_retry_provider import metrics
from airflow_retry_provider.announce import AfterCommit, run_after_commit
from airflow_retry_provider.breaker import announce
from airflow_retry_provider.breaker.announce import Outage
from airflow_retry_provider.breaker.sql import query
from airflow_retry_provider.database import ProviderDatabase, Store, from_row
from airflow_retry_provider.policy import breaker as machine
from airflow_retry_provider.policy.breaker import Admission, Breaker, BreakerSettings, Forced, Window
from airflow_retry_provider.policy.text import storable

KEEP_CALLS_SECONDS = 86400
"""Buckets of the window older than this are deleted when a failure is recorded."""

KEEP_HOLDS_SECONDS = 86400
"""A hold whose task has not asked again this long after its ``held_until`` is forgotten."""

MAX_REASON_CHARS = 500


@dataclass(frozen=True)
class BreakerStatus:
    """A dependency's breaker as the Dependencies page and ``airflow-retry breaker list`` show it.

    :param dependency: the dependency's name.
    :param breaker: its state.
    :param held: how many task instances are held now.
    :param failures_10m: unwell failures recorded in the last 10 minutes.
    :param calls_10m: calls recorded in the last 10 minutes.
    :param updated_at: when the row last changed.
    """

    dependency: str
    breaker: Breaker
    held: int
    failures_10m: int
    calls_10m: int
    updated_at: datetime


@dataclass(frozen=True)
class BreakerEvent:
    """One transition of a breaker (``retry_breaker_events``)."""

    id: int
    dependency: str
    at: datetime
    from_status: str
    to_status: str
    actor: str
    reason: str


@dataclass(frozen=True)
class Verdict:
    """What :meth:`BreakerStore.admit` answers a task.

    :param admission: run, probe or hold (and until when).
    :param hot: the window holds failures: the task should report its success (a closed breaker
        with no recent failures needs no news of successes).
    :param held_since: for a hold, when this task was first held (its longest wait counts from it).
    :param expired: for a hold, the task has waited its longest (``max_hold_seconds``): its hold
        is forgotten, and the task should fail with a letter that names the outage.
    """

    admission: Admission
    hot: bool
    held_since: datetime | None = None
    expired: bool = False


class BreakerStore(Store):
    """The breakers of every dependency, shared by every DAG and worker.

    :param db: the provider's database.
    """

    def _locked(self, cur: Any, dependency: str) -> tuple[Breaker, datetime]:
        cur.execute(query("ensure"), {"dependency": dependency})
        cur.execute(query("lock"), {"dependency": dependency})
        row = _one(cur)
        return from_row(Breaker, row), row["now"]

    def _save(
        self,
        cur: Any,
        dependency: str,
        before: Breaker,
        after: Breaker,
        actor: str,
        reason: str,
        calls: int = 0,
    ) -> list[AfterCommit]:
        """Write ``after``, record the transition and its outage; what the listeners do after the commit."""
        if after == before:
            return []
        cur.execute(query("save"), {"dependency": dependency, **asdict(after)})
        if (after.status, after.forced) != (before.status, before.forced):  # what tasks see follows
            metrics.incr("breaker", dependency, after.status)
            cur.execute(
                query("event"),
                {
                    "dependency": dependency,
                    "from_status": state_words(before),
                    "to_status": state_words(after),
                    "actor": storable(actor)[:200],
                    "reason": storable(reason)[:MAX_REASON_CHARS],
                },
            )
        return self._outage(cur, dependency, before, after, actor, reason, calls)

    def _outage(
        self, cur: Any, dependency: str, before: Breaker, after: Breaker, actor: str, reason: str, calls: int
    ) -> list[AfterCommit]:
        """Begin or end the outage row; tell it down at its first probe or forced open, recovered at its end."""
        later: list[AfterCommit] = []
        if after.opened_at is not None and after.opened_at != before.opened_at:
            cur.execute(
                query("outage_begin"),
                {
                    "dependency": dependency,
                    "opened_at": after.opened_at,
                    "failures_at_open": after.failures_at_open,
                    "calls_at_open": calls,
                    "opened_by": storable(actor)[:200],
                    "opened_reason": storable(reason)[:MAX_REASON_CHARS],
                },
            )
        if after.opened_at is not None and (after.status == machine.HALF_OPEN or after.forced == "open"):
            later += self._tell_down(cur, dependency, after.opened_at)
        if before.opened_at is not None and after.opened_at != before.opened_at:
            later += self._tell_down(cur, dependency, before.opened_at)  # ended before it was told
            cur.execute(query("outage_end"), {"dependency": dependency, "opened_at": before.opened_at})
            outage = self._outage_row(cur, dependency, before.opened_at)
            if outage is not None:
                later += announce.tell(announce.DependencyRecovered(cur, outage, self.db))
        return later

    def _tell_down(self, cur: Any, dependency: str, opened_at: datetime) -> list[AfterCommit]:
        cur.execute(query("outage_tell_down"), {"dependency": dependency, "opened_at": opened_at})
        if not _one(cur):
            return []  # told already
        outage = self._outage_row(cur, dependency, opened_at)
        return announce.tell(announce.DependencyDown(cur, outage, self.db)) if outage is not None else []

    def _outage_row(self, cur: Any, dependency: str, opened_at: datetime) -> Outage | None:
        cur.execute(query("outage"), {"dependency": dependency, "opened_at": opened_at})
        row = _one(cur)
        return Outage(**row) if row else None

    def get(self, dependency: str) -> Breaker:
        """The breaker of ``dependency`` (closed when it has never been written)."""
        with self.db.transaction() as cur:
            cur.execute(query("peek"), {"dependency": dependency})
            row = _one(cur)
        return from_row(Breaker, row) if row else Breaker()

    def _leads(self, cur: Any, dependency: str, key: str, breaker: Breaker) -> bool:
        """Whether ``key`` would be the longest held of an open breaker (it asks at the probe time)."""
        if breaker.status != machine.OPEN or breaker.forced is not None:
            return True  # no probe time to share out
        cur.execute(query("leads"), {"dependency": dependency, "ti_key": key})
        return bool(_one(cur)["leads"])

    def admit(self, dependency: str, key: str, settings: BreakerSettings) -> Verdict:
        """May task instance ``key`` use ``dependency`` now? Records a hold, or releases one.

        A hold lasts until the breaker's next probe (:func:`~airflow_retry_provider.policy.breaker.wake_at`):
        the task held longest asks at the probe time, the others a slack later.
        """
        with self.db.transaction() as cur:
            before, now = self._locked(cur, dependency)
            leads = self._leads(cur, dependency, key, before)
            admission, after = machine.admit(before, key, now, settings, leads=leads)
            reason = f"{key} probes" if admission.kind == "probe" else admission.reason
            cur.execute(query("prune_holds"), {"dependency": dependency, "keep_seconds": KEEP_HOLDS_SECONDS})
            if admission.kind != "hold":  # released before the transition is told: a probe is not held
                self._release(cur, dependency, key, credit=True)
            later = self._save(cur, dependency, before, after, key, reason)
            held_since, expired = None, False
            if admission.kind == "hold":  # a hold changes no breaker: its outage row exists
                held_since, expired = self._hold(cur, dependency, key, admission, after, now, settings)
            elif admission.kind == "probe":
                cur.execute(query("outage_probe"), {"dependency": dependency, "opened_at": after.opened_at})
            cur.execute(
                query("window_has_failures"),
                {"dependency": dependency, "window_seconds": settings.window_seconds},
            )
            hot = bool(_one(cur)["hot"]) or after.status != machine.CLOSED
        run_after_commit(later)
        return Verdict(admission, hot, held_since, expired)

    def hold_failed_try(self, dependency: str, key: str, settings: BreakerSettings) -> Verdict | None:
        """Hold task ``key`` whose try just failed unwell, when its breaker is open (Airflow 3.4's reschedule).

        Counted as a hold of the outage (an attempt saved) and released like one; None when the
        breaker would not hold that failure (:func:`~airflow_retry_provider.policy.breaker.holds_failed_try`).
        """
        with self.db.transaction() as cur:
            before, now = self._locked(cur, dependency)
            if not machine.holds_failed_try(before, key):
                return None
            until = machine.wake_at(before, now, settings, leads=self._leads(cur, dependency, key, before))
            reason = (
                f"held: the try failed while the breaker is {before.effective}; "
                f"asking again at {until:%Y-%m-%dT%H:%M:%SZ}"
            )
            admission = Admission("hold", until, reason)
            held_since, expired = self._hold(cur, dependency, key, admission, before, now, settings)
        return Verdict(admission, True, held_since, expired)

    def _hold(
        self,
        cur: Any,
        dependency: str,
        key: str,
        admission: Admission,
        breaker: Breaker,
        now: datetime,
        settings: BreakerSettings,
    ) -> tuple[datetime, bool]:
        """Record the hold of ``key`` and count it in the outage; when it waited its longest, forget it."""
        cur.execute(query("hold"), {"dependency": dependency, "ti_key": key, "held_until": admission.until})
        hold = _one(cur)
        expired = machine.hold_expired(hold["held_since"], now, settings)
        cur.execute(
            query("outage_held"),
            {
                "dependency": dependency,
                "opened_at": breaker.opened_at,
                "new_hold": int(hold["holds"]) == 1,
                "dag_id": key.split("/", 1)[0],
                "expired": expired,
            },
        )
        if expired:
            self._release(cur, dependency, key, credit=False)
        return hold["held_since"], expired

    def _release(self, cur: Any, dependency: str, key: str, *, credit: bool) -> None:
        """Forget the hold of ``key``; ``credit``: it runs again, one more released by its outage."""
        cur.execute(query("release"), {"dependency": dependency, "ti_key": key})
        released = _one(cur)
        if released and credit:
            cur.execute(
                query("outage_released"), {"dependency": dependency, "held_since": released["held_since"]}
            )

    def record_failure(
        self, dependency: str, key: str, settings: BreakerSettings, *, unwell: bool, reason: str = ""
    ) -> Breaker:
        """Task ``key`` failed on ``dependency``; ``unwell`` when the failure says the dependency is.

        An unwell failure counts in the window and may open the breaker (or reopen it, when it
        was the probe's); any other failure counts as a call and ends a probe's claim.
        """
        with self.db.transaction() as cur:
            before, now = self._locked(cur, dependency)
            cur.execute(query("record_call"), {"dependency": dependency, "failures": 1 if unwell else 0})
            if unwell:
                cur.execute(
                    query("window"), {"dependency": dependency, "window_seconds": settings.window_seconds}
                )
                counts = _one(cur)
                window = Window(int(counts["failures"]), int(counts["calls"]))
                after = machine.after_failure(before, window, now, settings, key=key)
                cur.execute(
                    query("prune_calls"), {"dependency": dependency, "keep_seconds": KEEP_CALLS_SECONDS}
                )
                why = f"{window.failures} failures in {window.calls} calls: {reason}"
                calls = window.calls
            else:
                after = machine.after_other_failure(before, key)
                why = f"the probe failed for another reason: {reason}"
                calls = 0
            later = self._save(cur, dependency, before, after, key, why, calls)
        run_after_commit(later)
        return after

    def record_success(self, dependency: str, key: str) -> Breaker:
        """Task ``key`` succeeded on ``dependency``: a call in the window; the probe's success closes it."""
        with self.db.transaction() as cur:
            before, _ = self._locked(cur, dependency)
            cur.execute(query("record_call"), {"dependency": dependency, "failures": 0})
            after = machine.after_success(before, key)
            later = self._save(cur, dependency, before, after, key, "the probe succeeded")
        run_after_commit(later)
        return after

    def force(self, dependency: str, state: Forced | None, actor: str, reason: str) -> Breaker:
        """A person forces the breaker ``open`` or ``closed``, or hands it back (None); recorded."""
        if state not in ("open", "closed", None):
            raise ValueError(f"state must be 'open', 'closed' or None, got {state!r}")
        with self.db.transaction() as cur:
            before, now = self._locked(cur, dependency)
            after = machine.force(before, state, now)
            later = self._save(cur, dependency, before, after, actor, reason or "(no reason given)")
        run_after_commit(later)
        return after

    def statuses(self) -> list[BreakerStatus]:
        """Every dependency that has a breaker row, by name."""
        with self.db.transaction() as cur:
            cur.execute(query("statuses"))
            rows = ProviderDatabase.rows(cur)
        return [
            BreakerStatus(
                row["dependency"],
                from_row(Breaker, row),
                int(row["held"]),
                int(row["failures_10m"]),
                int(row["calls_10m"]),
                row["updated_at"],
            )
            for row in rows
        ]

    def events(self, dependency: str, limit: int = 50) -> list[BreakerEvent]:
        """The newest transitions of ``dependency``, newest first."""
        with self.db.transaction() as cur:
            cur.execute(query("events"), {"dependency": dependency, "limit": limit})
            rows = ProviderDatabase.rows(cur)
        return [BreakerEvent(**row) for row in rows]

    def outages(self, dependency: str, limit: int = 20) -> list[Outage]:
        """The newest outages of ``dependency``, newest first (``held_now`` and ``dags_now`` not read: 0)."""
        with self.db.transaction() as cur:
            cur.execute(query("outages"), {"dependency": dependency, "limit": limit})
            rows = ProviderDatabase.rows(cur)
        return [Outage(**row) for row in rows]


def state_words(breaker: Breaker) -> str:
    """The breaker's state as people read it: ``closed``, or ``forced open (automatic state: closed)``."""
    if breaker.forced:
        return f"forced {breaker.forced} (automatic state: {breaker.status})"
    return breaker.status


def _one(cur: Any) -> dict[str, Any]:
    """The one row a statement returns ({} when none: psycopg 3 and psycopg 2 alike)."""
    return ProviderDatabase.one(cur) or {}
