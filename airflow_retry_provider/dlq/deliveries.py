"""Today's deliveries and the sweeper's delivery watch (issue 48); the decision is :mod:`policy.deliveries`.

A delivery is known to the provider once a letter's impact names it (``retry_letter_impacts``,
written at filing and refreshed by the sweeper): a delivery no letter ever blocked is on track and
not listed. Its SQL is ``sql/deliveries.sql``, run by the store (``store/deliveries.py``).

- :func:`todays_deliveries` (the plugin's Deliveries view and ``airflow-retry deliveries``): each
  delivery whose deadline is today in its own time zone, on track / at risk / lost, its latest
  replay time and the letters that block it.
- :func:`group_impacts` (the root-cause groups of the letters page and ``/api/groups``): what
  each root cause blocks, its letters' impacts summed and deduplicated.
- :func:`held_deliveries` (the Dependencies page): the deliveries the tasks a dependency's breaker
  holds put at risk, with the latest time each held task can start (read from Airflow's REST API
  with :class:`~airflow_retry_provider.dlq.impact.ImpactReader`, as a letter's impact is).
- :func:`watch_outages` (each sweep, with the sweeper's API): for each open breaker holding tasks,
  the deliveries they put at risk, told once per outage and delivery in a ``dependency-down``
  message with each one's latest start time.
- :func:`watch_deliveries` (each dead-letter sweep, after the impacts' refresh): without asking
  Airflow, turns *lost* every delivery an open letter still holds past its latest replay time and
  tells it (the ``delivery-lost`` alert), and tells once a delivery told at risk whose blocking
  letters were all replayed in time (the ``delivery-saved`` note). Both go through the
  ``impact`` announcement, deduplicated per root cause, delivery, deadline and status
  (``retry_delivery_alerts``).

**Why the lost alert precedes the deadline.** A delivery's deadline is its latest replay time plus
the replay path's expected time (:attr:`~airflow_retry_provider.policy.impact.Delivery.path_time`,
at least the failed task's own expected time and validation). The sweeper DAG runs every
:data:`SWEEP_CADENCE`; each sweep checks every open letter past its latest replay time, so the lost
alert is queued at most one cadence (plus the sweep's own run) after that time, which is before
the deadline whenever the path takes longer than that. A shorter path (or a sweeper DAG paused or
late) can make it arrive at or after the deadline; a delivery already lost when the letter is
filed is told at filing.
"""

from __future__ import annotations

import functools
import json
import logging
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from airflow_retry_provider import announce
from airflow_retry_provider.database import ProviderDatabase, from_row
from airflow_retry_provider.dlq.announce import DeliveriesHeld, ImpactAssessed
from airflow_retry_provider.dlq.impact import ImpactReader
from airflow_retry_provider.dlq.models import AsJson
from airflow_retry_provider.dlq.store import DeadLetterStore, DeliveryStore
from airflow_retry_provider.hooks.airflow_api import AirflowApi, AirflowApiError
from airflow_retry_provider.policy.deliveries import (
    Blocker,
    Standing,
    classify_delivery,
    is_today,
)
from airflow_retry_provider.policy.fields import FieldError
from airflow_retry_provider.policy.group_impact import GroupImpact, merge_impacts
from airflow_retry_provider.policy.impact import Delivery, Impact
from airflow_retry_provider.states import DELIVERY_STANDINGS, LETTER_STARTED, DeliveryStatus

log = logging.getLogger(__name__)

MAX_ROWS = 2000
"""At most this many (delivery, letter) pairs are read for one view or one watch."""
WATCH_LIMIT = 100
"""At most this many letters turned lost, and deliveries told saved, per sweep."""
SWEEP_CADENCE = timedelta(minutes=10)
"""The dead-letter sweeper DAG's schedule (``dags/dead_letter_sweeper.py``): how late a lost alert can be."""
MAX_HELD_TASKS = 10
"""At most this many held tasks (distinct DAG, run and task; the longest held first) are assessed
for one dependency: each costs a few REST calls per DAG."""
MAX_HELD_ROWS = 500
GROUP_LETTERS = 200
"""At most this many letters (the newest) are summed into one root-cause group's impact."""
STORED_IMPACTS = 10_000
"""Stored impacts kept parsed per process (about 8 MB): two grouped views' worth."""
WINDOW_BEFORE = timedelta(days=1)
WINDOW_AFTER = timedelta(days=2)
"""Deadlines read around ``now``: wide enough that "today" in any time zone (UTC-12 to UTC+14) is inside."""


@dataclass(frozen=True)
class BlockingLetter(AsJson):
    """A letter that blocks a delivery, as the view links to it."""

    letter_id: int
    dag_id: str
    run_id: str
    task_id: str
    status: str
    fingerprint: str
    latest_replay: datetime


@dataclass(frozen=True)
class DeliveryState:
    """One delivery today: where it stands and the letters that block it."""

    dag_id: str
    task_id: str
    deadline: datetime
    standing: Standing
    letters: tuple[BlockingLetter, ...]

    @property
    def name(self) -> str:
        return f"{self.dag_id}.{self.task_id}"

    def to_json(self) -> dict[str, Any]:
        return {
            "delivery": self.name,
            "dag_id": self.dag_id,
            "task_id": self.task_id,
            "deadline": self.deadline.isoformat(),
            "status": self.standing.status,
            "latest_replay": self.standing.latest_replay.isoformat(),
            "reason": self.standing.reason,
            "letters": [letter.to_json() for letter in self.letters],
        }


def _read(db: ProviderDatabase, now: datetime) -> list[DeliveryState]:
    """Every delivery with a deadline around ``now``, classified."""
    rows = DeliveryStore(db).blockers(now - WINDOW_BEFORE, now + WINDOW_AFTER, MAX_ROWS)
    if len(rows) == MAX_ROWS:
        log.warning("airflow-retry-provider: more than %s delivery rows: the rest not read", MAX_ROWS)
    grouped: dict[tuple[str, str, datetime], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        row["latest_replay"] = datetime.fromisoformat(row["latest_replay"])
        deadline = datetime.fromisoformat(row["deadline"])
        grouped[(row["dag_id"], row["task_id"], deadline)].append(row)
    found = []
    for (dag_id, task_id, deadline), group in grouped.items():
        blockers = []
        letters = []
        for row in group:
            started = None
            if (
                row["status"] in LETTER_STARTED
            ):  # the clear of its newest replay, else when it was seen resolved
                started = row["cleared_at"] or row["updated_at"]
            blockers.append(Blocker(int(row["letter_id"]), row["status"], row["latest_replay"], started))
            letters.append(from_row(BlockingLetter, row, dag_id="letter_dag_id", task_id="letter_task_id"))
        standing = classify_delivery(blockers, now)
        found.append(DeliveryState(dag_id, task_id, deadline, standing, tuple(letters)))
    found.sort(key=lambda d: (DELIVERY_STANDINGS.index(d.standing.status), d.standing.latest_replay, d.name))
    return found


def todays_deliveries(db: ProviderDatabase, now: datetime) -> list[DeliveryState]:
    """Each delivery due today (in its own time zone) that a letter blocks or blocked: lost first,
    then at risk, then on track; within each, the earliest latest replay time first."""
    return [delivery for delivery in _read(db, now) if is_today(delivery.deadline, now)]


@functools.lru_cache(maxsize=STORED_IMPACTS)
def stored_impact(text: str) -> Impact:
    """An impact as stored (its JSON text), parsed once per process.

    The grouped view sums thousands of them per page (``GROUP_LETTERS`` per root cause), the same ones
    at each refresh; parsing them each time made a page allocate about 100,000 objects, and the full
    garbage collections of the api-server's heap they set off were the tail of the view's time during
    a storm (bench/pages.py). An ``Impact`` is immutable, so the parsed value is shared; the text is
    its key, so a recomputed impact is parsed anew.
    """
    return Impact.from_json(json.loads(text))


def group_impacts(
    db: ProviderDatabase, fingerprints: Iterable[str], dag_ids: Iterable[str]
) -> dict[str, GroupImpact]:
    """What each root cause blocks: the impacts of its letters still in the way, in ``dag_ids`` (the
    DAGs the reader may see), summed and deduplicated (:func:`~policy.group_impact.merge_impacts`)."""
    wanted = sorted(set(fingerprints))
    if not wanted:
        return {}
    rows = DeliveryStore(db).group_impacts(wanted, sorted(set(dag_ids)), GROUP_LETTERS)
    by_group: dict[str, list[Impact]] = defaultdict(list)
    letters: dict[str, int] = defaultdict(int)
    for row in rows:  # each distinct impact once: merging one twice changes nothing but the count
        by_group[row["fingerprint"]].append(stored_impact(row["impact"]))
        letters[row["fingerprint"]] += int(row["letters"])
    return {
        fingerprint: replace(merge_impacts(impacts), letters=letters[fingerprint])
        for fingerprint, impacts in by_group.items()
    }


@dataclass(frozen=True)
class HeldDelivery:
    """A delivery that tasks held by a breaker put at risk: the latest time the first of them can start."""

    delivery: Delivery
    held: tuple[str, ...]
    """The held tasks (``dag.task`` of a run) on its path."""

    def to_json(self) -> dict[str, Any]:
        return {
            **self.delivery.to_json(),
            "delivery": self.delivery.name,
            "latest_start": self.delivery.latest_replay.isoformat(),
            "held": list(self.held),
        }


def held_deliveries(
    db: ProviderDatabase,
    api: AirflowApi,
    dependency: str,
    now: datetime,
    readable: Callable[[set[str]], set[str]] | None = None,
) -> tuple[list[HeldDelivery], list[str]]:
    """The deliveries the tasks ``dependency`` holds put at risk (only those of the DAGs
    ``readable`` keeps, when given), the earliest latest start first, and one note per task Airflow
    could not answer for."""
    rows = DeliveryStore(db).held_tasks(dependency, MAX_HELD_ROWS)
    tasks: dict[tuple[str, str, str], None] = {}
    for row in rows:
        dag_id, _, rest = str(row["ti_key"]).partition("/")
        run_and_task, _, _map_index = rest.rpartition("/")
        run_id, _, task_id = run_and_task.rpartition("/")
        if dag_id and run_id and task_id:
            tasks.setdefault((dag_id, run_id, task_id), None)
    if readable is not None:
        allowed = readable({dag_id for dag_id, _, _ in tasks})
        tasks = {key: None for key in tasks if key[0] in allowed}
    notes: list[str] = []
    if len(tasks) > MAX_HELD_TASKS:
        notes.append(f"{len(tasks)} held tasks: the {MAX_HELD_TASKS} held longest assessed")
    found: dict[tuple[str, datetime], HeldDelivery] = {}
    reader = ImpactReader(api)
    for dag_id, run_id, task_id in list(tasks)[:MAX_HELD_TASKS]:
        try:
            anchor = reader.run_anchor(dag_id, run_id)
            impact = reader.assess_task(dag_id, task_id, anchor, None, now)
        except (AirflowApiError, FieldError) as exc:
            notes.append(f"{dag_id}.{task_id}: {type(exc).__name__}")
            continue
        for delivery in impact.deliveries:
            key = (delivery.name, delivery.deadline)
            held = f"{dag_id}.{task_id} ({run_id})"
            kept = found.get(key)
            if kept is None:
                found[key] = HeldDelivery(delivery, (held,))
            else:
                earliest = delivery if delivery.latest_replay < kept.delivery.latest_replay else kept.delivery
                found[key] = HeldDelivery(earliest, (*kept.held, held))
    ordered = sorted(found.values(), key=lambda h: (h.delivery.latest_replay, h.delivery.name))
    return ordered, notes + reader.notes[:10]


@dataclass(frozen=True)
class Watch:
    """What one watch did: the letters whose deliveries turned lost, the deliveries told saved."""

    lost: tuple[int, ...] = ()
    saved: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()


def watch_deliveries(store: DeadLetterStore, now: datetime) -> Watch:
    """The sweeper's step: lost deliveries told before their deadline, saved ones noted. Never raises."""
    lost: list[int] = []
    saved: list[str] = []
    errors: list[str] = []
    try:
        lost = _turn_lost(store, now)
    except Exception as exc:  # the watch never stops the sweep
        errors.append(f"lost deliveries: {type(exc).__name__}")
        log.exception("airflow-retry-provider: could not check the deliveries past their latest replay time")
    try:
        saved = _note_saved(store, now)
    except Exception as exc:
        errors.append(f"saved deliveries: {type(exc).__name__}")
        log.exception("airflow-retry-provider: could not check the deliveries saved by a replay")
    return Watch(tuple(lost), tuple(saved), tuple(errors))


def _turn_lost(store: DeadLetterStore, now: datetime) -> list[int]:
    """Each open letter holding a delivery past its latest replay time: stored lost, and told."""
    letters = DeliveryStore(store.db).letters_past_latest_replay(now, WATCH_LIMIT)
    turned = []
    for letter in letters:
        stored = store.impact(letter.id)
        if stored is None:
            continue
        impact = stored.impact
        deliveries = tuple(
            replace(d, status=DeliveryStatus.LOST)
            if d.status == DeliveryStatus.AT_RISK and d.latest_replay < now
            else d
            for d in impact.deliveries
        )
        impact = replace(impact, deliveries=deliveries)
        store.set_impact(letter.id, impact)
        announce.tell(ImpactAssessed(store.db, letter.id, letter, impact))
        turned.append(letter.id)
    return turned


def _note_saved(store: DeadLetterStore, now: datetime) -> list[str]:
    """Each delivery told at risk whose blocking letters were all replayed in time and resolved: told saved once."""
    told = DeliveryStore(store.db).told_at_risk_not_settled(
        now - WINDOW_BEFORE, now + WINDOW_AFTER, WATCH_LIMIT
    )
    if not told:
        return []
    standing = {(d.name, d.deadline): d for d in _read(store.db, now)}
    noted = []
    for row in told:
        delivery = standing.get((row["delivery"], row["deadline"]))
        if (
            delivery is None
            or delivery.standing.status != DeliveryStatus.ON_TRACK
            or not delivery.standing.settled
        ):
            continue
        letter = store.get(int(row["letter_id"]))
        stored = store.impact(int(row["letter_id"]))
        if letter is None or stored is None:
            continue
        mine = [
            d for d in stored.impact.deliveries if d.name == delivery.name and d.deadline == delivery.deadline
        ]
        if not mine:
            continue
        note = replace(
            stored.impact, deliveries=(replace(mine[0], status=DeliveryStatus.SAVED),), delivery_count=1
        )
        announce.tell(ImpactAssessed(store.db, letter.id, letter, note))
        noted.append(delivery.name)
    return noted


def watch_outages(store: DeadLetterStore, api: AirflowApi, now: datetime) -> list[str]:
    """The sweeper's step for the breakers: each open one that holds tasks, the deliveries they put
    at risk told (the ``held`` announcement: one ``dependency-down`` message per outage with the new
    ones; the listener deduplicates). Returns the dependencies announced. Never raises."""
    from airflow_retry_provider.breaker.store import BreakerStore

    told = []
    try:
        statuses = BreakerStore(store.db).statuses()
    except Exception:  # the watch never stops the sweep
        log.exception("airflow-retry-provider: could not read the breakers")
        return []
    for status in statuses:
        breaker = status.breaker
        if breaker.effective == "closed" or not status.held or breaker.opened_at is None:
            continue
        try:
            found, notes = held_deliveries(store.db, api, status.dependency, now)
        except Exception as exc:
            log.warning(
                "airflow-retry-provider: deliveries held by %s: %s", status.dependency, type(exc).__name__
            )
            continue
        if notes:
            log.warning("airflow-retry-provider: deliveries held by %s: %s", status.dependency, notes)
        if found:
            announce.tell(DeliveriesHeld(store.db, status.dependency, breaker.opened_at, found))
            told.append(status.dependency)
    return told
