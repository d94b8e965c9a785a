"""What a dead letter blocks, and which deliveries it puts at risk (issue 48).

Pure: from frozen facts about the failed task's DAG and the DAGs scheduled on its assets (read
from Airflow's REST API by :mod:`airflow_retry_provider.dlq.impact`), :func:`assess_impact`
answers:

1. **blocked tasks**: the tasks downstream of the failed one that cannot start. A task whose
   trigger rule lets it run after an upstream failure (``all_done``, ``one_failed``, ...) is not
   blocked, and blocks nothing through itself. In the failed task's own DAG these are the tasks
   of its run; across an asset they are the tasks of the consumer DAGs' runs that will not be
   triggered;
2. **assets not produced**: the outlets of the failed task and of every blocked task;
3. **consumer DAGs**: the DAGs scheduled on those assets (their tasks, when known, are blocked
   from their roots on);
4. **workspaces**: those of the failed task and of every blocked task;
5. **deliveries at risk**: for each task on the blocked path (the failed one included) with a
   delivery deadline, the latest moment a replay can start and still deliver:
   ``deadline - longest path``, the longest path being the largest sum of the tasks' expected
   times (each one's expected duration plus its validation) from the failed task to the
   deadline's task, both included. When that moment is already past (``now``), the delivery
   is ``lost``: it can no longer be met, and the letter says so instead of a replay time.

A task's expected duration is the longest of its recent successful runs and its declared
``expected_duration`` (never the optimistic one); its ``validation`` is always added, never
dropped to make a deadline fit (the retry planner's rule). A task with neither history nor a
declared duration counts as zero and is named in the delivery's ``unestimated``: the latest
replay time is then too late by its real duration.

Every list is bounded: a count and the first :data:`MAX_NAMES` names, sorted; a graph of
thousands of tasks answers in one pass over its edges.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from airflow_retry_provider.policy.fields import FieldError, show
from airflow_retry_provider.states import DeliveryStatus

MAX_NAMES = 10
"""How many names each list of an impact keeps beside its count."""

MAX_DELIVERIES = 20
"""How many deliveries an impact keeps (the earliest latest-replay times first)."""

BLOCKING_TRIGGER_RULES = frozenset({"all_success", "none_failed", "none_failed_min_one_success"})
"""Trigger rules under which an upstream failure stops a task (it ends ``upstream_failed``)."""

DELIVERY_PARAM = "retry_provider_delivery"
"""The task (or DAG) param that declares a delivery: ``{"at": "09:00", "timezone":
"America/Sao_Paulo", "days_after": 1, "expected_duration_seconds": 600, "validation_seconds": 120}``
(every key optional; without ``at`` no deadline, only durations)."""

DELIVERY_KEYS = frozenset({"at", "timezone", "days_after", "expected_duration_seconds", "validation_seconds"})


@dataclass(frozen=True)
class TaskFacts:
    """What is known of one task, in its DAG.

    :param dag_id: its DAG.
    :param task_id: its id.
    :param downstream: the ids of its direct downstream tasks, in the same DAG.
    :param outlets: the assets it produces (names or URIs).
    :param trigger_rule: Airflow's trigger rule; only :data:`BLOCKING_TRIGGER_RULES` are blocked
        by an upstream failure.
    :param recent_durations: its recent successful runs' durations.
    :param expected_duration: its declared ``expected_duration`` (None: not declared).
    :param validation: its declared ``validation`` time (checking its output).
    :param deadline: its delivery deadline for the run concerned (aware), if it has one.
    :param workspace: the workspace whose data it carries, if known.
    """

    dag_id: str
    task_id: str
    downstream: tuple[str, ...] = ()
    outlets: tuple[str, ...] = ()
    trigger_rule: str = "all_success"
    recent_durations: tuple[timedelta, ...] = ()
    expected_duration: timedelta | None = None
    validation: timedelta = timedelta(0)
    deadline: datetime | None = None
    workspace: str | None = None

    def __post_init__(self) -> None:
        where = f"tasks[{self.dag_id}.{self.task_id}]"
        for name in ("dag_id", "task_id"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise FieldError(f"must be a non-empty string, got {show(value)}", path=f"{where}.{name}")
        for position, duration in enumerate(self.recent_durations):
            _check_duration(f"{where}.recent_durations[{position}]", duration)
        if self.expected_duration is not None:
            _check_duration(f"{where}.expected_duration", self.expected_duration)
        _check_duration(f"{where}.validation", self.validation)
        if self.deadline is not None and (
            not isinstance(self.deadline, datetime) or self.deadline.utcoffset() is None
        ):
            raise FieldError(
                f"must be a timezone-aware datetime, got {show(self.deadline)}", path=f"{where}.deadline"
            )

    @property
    def key(self) -> tuple[str, str]:
        return (self.dag_id, self.task_id)

    @property
    def estimated(self) -> bool:
        """Whether anything says how long it runs (history or a declared duration)."""
        return bool(self.recent_durations) or self.expected_duration is not None

    @property
    def expected_time(self) -> timedelta:
        """Its expected duration (the longest of history and declaration) plus its validation."""
        run = max((*self.recent_durations, self.expected_duration or timedelta(0)))
        return run + self.validation


@dataclass(frozen=True)
class DeliverySpec:
    """A :data:`DELIVERY_PARAM` read: the deadline's wall time (None: no deadline) and the durations."""

    at: tuple[int, int] | None = None
    timezone: str = "America/Sao_Paulo"
    days_after: int = 1
    expected_duration: timedelta | None = None
    validation: timedelta = timedelta(0)

    def resolve(self, anchor: datetime | None) -> datetime | None:
        """The deadline for a run whose data interval ends at ``anchor`` (as ``DeliveryDeadline.resolve``)."""
        if self.at is None or anchor is None:
            return None
        # a plain datetime, whatever the anchor's class (a worker's is pendulum's, whose replace() differs)
        local = datetime.fromtimestamp(anchor.timestamp(), ZoneInfo(self.timezone)) + timedelta(
            days=self.days_after
        )
        return local.replace(hour=self.at[0], minute=self.at[1], second=0, microsecond=0)


def parse_delivery(path: str, value: object) -> DeliverySpec:
    """A :data:`DELIVERY_PARAM` value; bad input is a FieldError naming the field and the value."""
    if not isinstance(value, Mapping):
        raise FieldError(f"must be an object, got {show(value)}", path=path)
    unexpected = sorted(str(key) for key in value.keys() - DELIVERY_KEYS)
    if unexpected:
        raise FieldError(f"unexpected key {unexpected[0]!r}", path=path)
    at = None
    if "at" in value:
        hour, _, minute = str(value["at"]).partition(":")
        if not (hour.isdigit() and minute.isdigit() and int(hour) < 24 and int(minute) < 60):
            raise FieldError(f"must be 'HH:MM', got {show(value['at'])}", path=f"{path}.at")
        at = (int(hour), int(minute))
    zone = value.get("timezone", "America/Sao_Paulo")
    try:
        ZoneInfo(str(zone))
    except (ValueError, ZoneInfoNotFoundError):
        raise FieldError(f"unknown time zone {show(zone)}", path=f"{path}.timezone") from None
    expected = None
    if "expected_duration_seconds" in value:
        expected = timedelta(
            seconds=_count(f"{path}.expected_duration_seconds", value["expected_duration_seconds"])
        )
    return DeliverySpec(
        at=at,
        timezone=str(zone),
        days_after=_count(f"{path}.days_after", value.get("days_after", 1)),
        expected_duration=expected,
        validation=timedelta(
            seconds=_count(f"{path}.validation_seconds", value.get("validation_seconds", 0))
        ),
    )


def _count(path: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10**7:
        raise FieldError(f"must be an integer between 0 and 10000000, got {show(value)}", path=path)
    return value


def _check_duration(path: str, value: object) -> None:
    if not isinstance(value, timedelta) or value < timedelta(0):
        raise FieldError(f"must be a timedelta >= 0, got {show(value)}", path=path)


@dataclass(frozen=True)
class Names:
    """A bounded list: how many there are and the first :data:`MAX_NAMES` of them, sorted."""

    count: int = 0
    first: tuple[str, ...] = ()

    @classmethod
    def of(cls, names: Iterable[str]) -> Names:
        unique = set(names)
        return cls(count=len(unique), first=tuple(heapq.nsmallest(MAX_NAMES, unique)))

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "first": list(self.first)}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Names:
        return cls(count=int(value["count"]), first=tuple(str(name) for name in value["first"]))

    def describe(self) -> str:
        """``a, b, c`` or ``a, b, c and 7 more``."""
        more = self.count - len(self.first)
        text = ", ".join(self.first)
        return f"{text} and {more} more" if more > 0 else text


@dataclass(frozen=True)
class Delivery:
    """One delivery on the blocked path.

    :param dag_id: the DAG of the task that delivers.
    :param task_id: the task that delivers.
    :param deadline: when it must have delivered.
    :param path_time: the longest path's expected time, from the failed task to this one.
    :param latest_replay: ``deadline - path_time``: the latest moment a replay can start.
    :param status: :data:`DeliveryStatus.AT_RISK` (a replay by ``latest_replay`` still delivers) or :data:`DeliveryStatus.LOST`.
    :param unestimated: tasks on the path with no known duration (counted as zero).
    """

    dag_id: str
    task_id: str
    deadline: datetime
    path_time: timedelta
    latest_replay: datetime
    status: str
    unestimated: Names = field(default_factory=Names)

    @property
    def name(self) -> str:
        return f"{self.dag_id}.{self.task_id}"

    def describe(self) -> str:
        """ "replay by ... to meet the ... delivery of ..." or "the ... delivery ... can no longer be met"."""
        deadline = _stamp(self.deadline)
        if self.status == DeliveryStatus.LOST:
            return f"the {deadline} delivery of {self.name} can no longer be met"
        if self.status == DeliveryStatus.SAVED:
            return f"the {deadline} delivery of {self.name} is on track again: replayed in time"
        return f"replay by {_stamp(self.latest_replay)} to meet the {deadline} delivery of {self.name}"

    def to_json(self) -> dict[str, Any]:
        return {
            "dag_id": self.dag_id,
            "task_id": self.task_id,
            "deadline": self.deadline.isoformat(),
            "path_seconds": int(self.path_time.total_seconds()),
            "latest_replay": self.latest_replay.isoformat(),
            "status": self.status,
            "unestimated": self.unestimated.to_json(),
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Delivery:
        return cls(
            dag_id=str(value["dag_id"]),
            task_id=str(value["task_id"]),
            deadline=datetime.fromisoformat(value["deadline"]),
            path_time=timedelta(seconds=int(value["path_seconds"])),
            latest_replay=datetime.fromisoformat(value["latest_replay"]),
            status=str(value["status"]),
            unestimated=Names.from_json(value["unestimated"]),
        )


def _stamp(value: datetime) -> str:
    """``2026-12-04 09:00 -03``: the time in its own zone, to the minute."""
    return value.strftime("%Y-%m-%d %H:%M %Z").strip() or value.isoformat()


NAME_LISTS = ("blocked_tasks", "assets", "consumer_dags", "workspaces")
"""The fields of an :class:`Impact` that are :class:`Names`, in its order."""


@dataclass(frozen=True)
class Impact:
    """What one failed task blocks. ``deliveries`` holds at most :data:`MAX_DELIVERIES`, the
    earliest latest-replay times first; ``delivery_count`` counts them all."""

    blocked_tasks: Names = field(default_factory=Names)
    assets: Names = field(default_factory=Names)
    consumer_dags: Names = field(default_factory=Names)
    workspaces: Names = field(default_factory=Names)
    deliveries: tuple[Delivery, ...] = ()
    delivery_count: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            **{name: getattr(self, name).to_json() for name in NAME_LISTS},
            "deliveries": [delivery.to_json() for delivery in self.deliveries],
            "delivery_count": self.delivery_count,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Impact:
        names: dict[str, Any] = {name: Names.from_json(value[name]) for name in NAME_LISTS}
        return cls(
            **names,
            deliveries=tuple(Delivery.from_json(item) for item in value["deliveries"]),
            delivery_count=int(value["delivery_count"]),
        )

    def summary(self) -> list[str]:
        """Lines for a person: what is blocked, then each delivery."""
        lines = []
        if self.blocked_tasks.count:
            lines.append(f"blocks {self.blocked_tasks.count} task(s): {self.blocked_tasks.describe()}")
        if self.assets.count:
            lines.append(f"assets not produced: {self.assets.describe()}")
        if self.consumer_dags.count:
            lines.append(f"DAGs scheduled on them: {self.consumer_dags.describe()}")
        if self.workspaces.count:
            lines.append(f"workspaces: {self.workspaces.describe()}")
        lines.extend(delivery.describe() for delivery in self.deliveries)
        if self.delivery_count > len(self.deliveries):
            lines.append(f"and {self.delivery_count - len(self.deliveries)} more deliveries")
        return lines


def assess_impact(
    failed: tuple[str, str],
    tasks: Sequence[TaskFacts],
    consumers: Mapping[str, Sequence[str]],
    *,
    now: datetime,
) -> Impact:
    """What the failure of ``failed`` (``(dag_id, task_id)``) blocks and puts at risk.

    :param tasks: the tasks of the failed task's DAG and of any consumer DAG whose structure is
        known (a consumer DAG without tasks here is still listed, with no delivery).
    :param consumers: asset -> the DAGs scheduled on it.
    :param now: the clock (aware): a delivery whose latest replay is before it is lost.
    """
    if not isinstance(now, datetime) or now.utcoffset() is None:
        raise FieldError(f"must be a timezone-aware datetime, got {show(now)}", path="now")
    by_key: dict[tuple[str, str], TaskFacts] = {}
    for facts in tasks:
        if facts.key in by_key:
            raise FieldError(f"appears twice: {facts.dag_id}.{facts.task_id}", path="tasks")
        by_key[facts.key] = facts
    if failed not in by_key:
        raise FieldError(f"is not among the tasks, got {show(failed)}", path="failed")

    roots = _roots(by_key)
    # walk the blocked part: breadth first, each task once; edges across an asset go from the
    # producing task to the consumer DAGs' roots
    upstream: dict[tuple[str, str], list[tuple[str, str]]] = {failed: []}
    order = [failed]
    consumer_dags: set[str] = set()
    assets: set[str] = set()
    position = 0
    while position < len(order):
        current = by_key[order[position]]
        position += 1
        successors = [(current.dag_id, task_id) for task_id in current.downstream]
        for asset in current.outlets:
            assets.add(asset)
            for dag_id in consumers.get(asset, ()):
                consumer_dags.add(dag_id)
                successors.extend(roots.get(dag_id, ()))
        for key in successors:
            successor = by_key.get(key)
            if successor is None or successor.trigger_rule not in BLOCKING_TRIGGER_RULES:
                continue
            if key in upstream:
                upstream[key].append(current.key)
            else:
                upstream[key] = [current.key]
                order.append(key)

    blocked = order[1:]
    workspaces = {by_key[key].workspace for key in order if by_key[key].workspace}
    deliveries = _deliveries(failed, by_key, upstream, now)
    return Impact(
        blocked_tasks=Names.of(f"{dag_id}.{task_id}" for dag_id, task_id in blocked),
        assets=Names.of(assets),
        consumer_dags=Names.of(consumer_dags),
        workspaces=Names.of(workspace for workspace in workspaces if workspace),
        deliveries=tuple(deliveries[:MAX_DELIVERIES]),
        delivery_count=len(deliveries),
    )


def _roots(by_key: Mapping[tuple[str, str], TaskFacts]) -> dict[str, list[tuple[str, str]]]:
    """Each DAG's tasks that no task of the same DAG points to."""
    pointed = {(facts.dag_id, task_id) for facts in by_key.values() for task_id in facts.downstream}
    roots: dict[str, list[tuple[str, str]]] = {}
    for key in by_key:
        if key not in pointed:
            roots.setdefault(key[0], []).append(key)
    return roots


def _deliveries(
    failed: tuple[str, str],
    by_key: Mapping[tuple[str, str], TaskFacts],
    upstream: Mapping[tuple[str, str], list[tuple[str, str]]],
    now: datetime,
) -> list[Delivery]:
    """Each deadline on the blocked path, with the longest path to it (Kahn's order)."""
    pending = {key: len(sources) for key, sources in upstream.items()}
    downstream: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for key, sources in upstream.items():
        for source in sources:
            downstream.setdefault(source, []).append(key)
    longest: dict[tuple[str, str], timedelta] = {}
    unestimated: dict[tuple[str, str], frozenset[str]] = {}
    ready = [failed]
    while ready:
        key = ready.pop()
        facts = by_key[key]
        sources = upstream[key]
        before = max(sources, key=lambda source: longest[source]) if sources else None
        longest[key] = facts.expected_time + (longest[before] if before else timedelta(0))
        missing = unestimated[before] if before else frozenset()
        unestimated[key] = missing if facts.estimated else missing | {f"{facts.dag_id}.{facts.task_id}"}
        for successor in downstream.get(key, ()):
            pending[successor] -= 1
            if pending[successor] == 0:
                ready.append(successor)
    deliveries = []
    for key, path_time in longest.items():  # a cycle (never in a DAG) leaves its tasks out
        deadline = by_key[key].deadline
        if deadline is None:
            continue
        latest = deadline - path_time
        deliveries.append(
            Delivery(
                dag_id=key[0],
                task_id=key[1],
                deadline=deadline,
                path_time=path_time,
                latest_replay=latest,
                status=DeliveryStatus.LOST if latest < now else DeliveryStatus.AT_RISK,
                unestimated=Names.of(unestimated[key]),
            )
        )
    deliveries.sort(key=lambda delivery: (delivery.latest_replay, delivery.dag_id, delivery.task_id))
    return deliveries
