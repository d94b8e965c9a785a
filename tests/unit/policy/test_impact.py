"""What a dead letter blocks and the deliveries it puts at risk (policy/impact.py)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from airflow_retry_provider.policy.fields import FieldError
from airflow_retry_provider.policy.impact import (
    MAX_DELIVERIES,
    MAX_NAMES,
    Impact,
    TaskFacts,
    assess_impact,
    parse_delivery,
)
from airflow_retry_provider.states import DeliveryStatus

NOW = datetime(2026, 12, 4, 3, 0, tzinfo=timezone.utc)
DEADLINE = datetime(2026, 12, 4, 12, 0, tzinfo=timezone.utc)
MIN = timedelta(minutes=1)


def chain(*task_ids: str, dag_id: str = "etl", **last: object) -> list[TaskFacts]:
    """A linear chain of tasks of ``dag_id``, each declared to run 10 min; ``last`` overrides the last one."""
    tasks = []
    for position, task_id in enumerate(task_ids):
        downstream = (task_ids[position + 1],) if position + 1 < len(task_ids) else ()
        facts: dict[str, object] = {"downstream": downstream, "expected_duration": 10 * MIN}
        if position == len(task_ids) - 1:
            facts.update(last)
        tasks.append(TaskFacts(dag_id, task_id, **facts))  # type: ignore[arg-type]
    return tasks


def test_chain_blocks_downstream_and_computes_the_latest_replay() -> None:
    """A chain of three: the two after the failed one are blocked, the last one's deadline less 30 min is the latest replay."""
    impact = assess_impact(("etl", "a"), chain("a", "b", "c", deadline=DEADLINE), {}, now=NOW)
    assert impact.blocked_tasks.count == 2
    assert impact.blocked_tasks.first == ("etl.b", "etl.c")
    (delivery,) = impact.deliveries
    assert delivery.name == "etl.c"
    assert delivery.path_time == 30 * MIN
    assert delivery.latest_replay == DEADLINE - 30 * MIN
    assert delivery.status == DeliveryStatus.AT_RISK
    assert (
        "replay by 2026-12-04 11:30 UTC to meet the 2026-12-04 12:00 UTC delivery of etl.c"
        == delivery.describe()
    )


def test_diamond_takes_the_longest_branch() -> None:
    """a -> (b: 10 min, c: 50 min) -> d: the path through c counts, not the sum of both branches."""
    tasks = [
        TaskFacts("etl", "a", downstream=("b", "c"), expected_duration=5 * MIN),
        TaskFacts("etl", "b", downstream=("d",), expected_duration=10 * MIN),
        TaskFacts("etl", "c", downstream=("d",), expected_duration=50 * MIN),
        TaskFacts("etl", "d", expected_duration=5 * MIN, deadline=DEADLINE),
    ]
    impact = assess_impact(("etl", "a"), tasks, {}, now=NOW)
    assert impact.blocked_tasks.count == 3
    (delivery,) = impact.deliveries
    assert delivery.path_time == 60 * MIN


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        # declared only: the declaration
        ({"expected_duration": 10 * MIN}, 10 * MIN),
        # history longer than the declaration: the history (never the optimistic one)
        ({"expected_duration": 10 * MIN, "recent_durations": (7 * MIN, 25 * MIN)}, 25 * MIN),
        # declaration longer than the history: the declaration
        ({"expected_duration": 40 * MIN, "recent_durations": (7 * MIN,)}, 40 * MIN),
        # validation is always added, never dropped
        ({"expected_duration": 10 * MIN, "validation": 15 * MIN}, 25 * MIN),
        # history and validation, nothing declared
        ({"recent_durations": (3 * MIN,), "validation": 2 * MIN}, 5 * MIN),
        # nothing known: zero, and named as unestimated
        ({}, timedelta(0)),
    ],
)
def test_expected_time_of_the_deadline_task(facts: dict[str, object], expected: timedelta) -> None:
    """The failed task's own deadline: the latest replay is its deadline less its expected time."""
    task = TaskFacts("etl", "a", deadline=DEADLINE, **facts)  # type: ignore[arg-type]
    (delivery,) = assess_impact(("etl", "a"), [task], {}, now=NOW).deliveries
    assert delivery.path_time == expected
    assert delivery.unestimated.first == (() if facts else ("etl.a",))


@pytest.mark.parametrize(
    ("now", "status"),
    [
        # hours before the latest replay time
        (NOW, DeliveryStatus.AT_RISK),
        # exactly at the latest replay time: a replay now still delivers
        (DEADLINE - 30 * MIN, DeliveryStatus.AT_RISK),
        # one second too late
        (DEADLINE - 30 * MIN + timedelta(seconds=1), DeliveryStatus.LOST),
        # after the deadline itself
        (DEADLINE + MIN, DeliveryStatus.LOST),
    ],
)
def test_lost_once_the_latest_replay_time_is_past(now: datetime, status: str) -> None:
    """A delivery is lost once now is past its latest replay time, at risk until then."""
    impact = assess_impact(("etl", "a"), chain("a", "b", "c", deadline=DEADLINE), {}, now=now)
    (delivery,) = impact.deliveries
    assert delivery.status == status
    if status == DeliveryStatus.LOST:
        assert delivery.describe() == "the 2026-12-04 12:00 UTC delivery of etl.c can no longer be met"


@pytest.mark.parametrize(
    ("rule", "blocked"),
    [
        # the default: an upstream failure stops it
        ("all_success", ("etl.b", "etl.c")),
        # none_failed: stopped too (upstream_failed)
        ("none_failed", ("etl.b", "etl.c")),
        # all_done runs anyway: not blocked, and blocks nothing through itself
        ("all_done", ()),
        # one_failed runs because of the failure
        ("one_failed", ()),
    ],
)
def test_trigger_rules_decide_what_is_blocked(rule: str, blocked: tuple[str, ...]) -> None:
    """Only a task whose trigger rule an upstream failure stops is blocked."""
    tasks = [
        TaskFacts("etl", "a", downstream=("b",)),
        TaskFacts("etl", "b", downstream=("c",), trigger_rule=rule),
        TaskFacts("etl", "c"),
    ]
    assert assess_impact(("etl", "a"), tasks, {}, now=NOW).blocked_tasks.first == blocked


def test_assets_consumers_and_workspaces_across_dags() -> None:
    """The chain's asset is not produced; the DAG scheduled on it is blocked from its root, with its deadline and workspace."""
    tasks = [
        *chain("a", "b", dag_id="silver"),
        TaskFacts(
            "silver", "c", outlets=("asset://silver/orders",), expected_duration=10 * MIN, workspace="ws-1"
        ),
        *chain("load", "report", dag_id="gold", deadline=DEADLINE),
    ]
    tasks[1] = TaskFacts("silver", "b", downstream=("c",), expected_duration=10 * MIN)
    tasks[-1] = TaskFacts("gold", "report", expected_duration=10 * MIN, deadline=DEADLINE, workspace="ws-2")
    consumers = {"asset://silver/orders": ("gold", "audit")}
    impact = assess_impact(("silver", "a"), tasks, consumers, now=NOW)
    assert impact.blocked_tasks.first == ("gold.load", "gold.report", "silver.b", "silver.c")
    assert impact.assets.first == ("asset://silver/orders",)
    assert impact.consumer_dags.first == ("audit", "gold")  # audit's tasks unknown: listed, no delivery
    assert impact.workspaces.first == ("ws-1", "ws-2")
    (delivery,) = impact.deliveries
    assert (delivery.name, delivery.path_time) == ("gold.report", 50 * MIN)


def test_thousands_of_downstream_tasks_answer_bounded() -> None:
    """A fan-out to 5000 tasks, each with a deadline: counts, the first names, and at most MAX_DELIVERIES deliveries."""
    fan = tuple(f"t{index:05d}" for index in range(5000))
    tasks = [TaskFacts("big", "root", downstream=fan, expected_duration=MIN)]
    tasks += [
        TaskFacts(
            "big",
            task_id,
            expected_duration=MIN,
            deadline=DEADLINE + index * MIN,
            workspace=f"ws{index % 50}",
        )
        for index, task_id in enumerate(fan)
    ]
    impact = assess_impact(("big", "root"), tasks, {}, now=NOW)
    assert impact.blocked_tasks.count == 5000
    assert impact.blocked_tasks.first == tuple(f"big.t{index:05d}" for index in range(MAX_NAMES))
    assert impact.workspaces.count == 50
    assert impact.delivery_count == 5000
    assert len(impact.deliveries) == MAX_DELIVERIES
    assert impact.deliveries[0].name == "big.t00000"  # the earliest latest-replay first
    assert "and 4980 more deliveries" in impact.summary()


def test_deep_chain_of_thousands_sums_every_task() -> None:
    """A chain of 3000 tasks of one minute each: the path counts all of them (no recursion limit)."""
    ids = [f"t{index}" for index in range(3000)]
    tasks = chain(*ids, deadline=DEADLINE + timedelta(days=3))
    (delivery,) = assess_impact(("etl", "t0"), tasks, {}, now=NOW).deliveries
    assert delivery.path_time == 3000 * 10 * MIN


def test_json_round_trip() -> None:
    """An impact stored as JSON reads back equal."""
    impact = assess_impact(("etl", "a"), chain("a", "b", "c", deadline=DEADLINE, workspace="w"), {}, now=NOW)
    assert Impact.from_json(impact.to_json()) == impact


@pytest.mark.parametrize(
    ("call", "message"),
    [
        # a naive clock
        (
            lambda: assess_impact(("etl", "a"), chain("a"), {}, now=datetime(2026, 1, 1)),
            "now: must be a timezone-aware",
        ),
        # the failed task missing from the graph
        (lambda: assess_impact(("etl", "x"), chain("a"), {}, now=NOW), "failed: is not among the tasks"),
        # a task twice
        (lambda: assess_impact(("etl", "a"), chain("a") * 2, {}, now=NOW), "tasks: appears twice: etl.a"),
        # a negative duration, named by its field
        (lambda: TaskFacts("etl", "a", validation=-MIN), "tasks[etl.a].validation: must be a timedelta >= 0"),
        # a naive deadline
        (
            lambda: TaskFacts("etl", "a", deadline=datetime(2026, 1, 1)),
            "tasks[etl.a].deadline: must be a timezone-aware",
        ),
    ],
)
def test_bad_input_names_the_field(call: object, message: str) -> None:
    """Bad input is a FieldError naming the field and the value."""
    with pytest.raises(FieldError, match=message.replace("[", r"\[").replace("]", r"\]")):
        call()  # type: ignore[operator]


@pytest.mark.parametrize(
    ("value", "anchor", "expected"),
    [
        # the day after the interval ends, at 09:00 local (Sao Paulo is UTC-3)
        (
            {"at": "09:00"},
            datetime(2026, 12, 3, 3, 0, tzinfo=timezone.utc),
            datetime(2026, 12, 4, 12, 0, tzinfo=timezone.utc),
        ),
        # the local day counts, not UTC's: 01:00 UTC on the 3rd is still the 2nd in Sao Paulo
        (
            {"at": "09:00"},
            datetime(2026, 12, 3, 1, 0, tzinfo=timezone.utc),
            datetime(2026, 12, 3, 12, 0, tzinfo=timezone.utc),
        ),
        # same day, UTC
        (
            {"at": "23:30", "timezone": "UTC", "days_after": 0},
            datetime(2026, 12, 3, tzinfo=timezone.utc),
            datetime(2026, 12, 3, 23, 30, tzinfo=timezone.utc),
        ),
        # durations only: no deadline
        ({"expected_duration_seconds": 60}, datetime(2026, 12, 3, tzinfo=timezone.utc), None),
    ],
)
def test_a_declared_delivery_resolves_like_delivery_deadline(value, anchor, expected) -> None:
    """The param's deadline is the wall time days_after the interval's end, in its time zone."""
    resolved = parse_delivery("p", value).resolve(anchor)
    assert resolved == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        # not an object
        ("09:00", "p: must be an object"),
        # a key nobody reads (a typo)
        ({"at": "09:00", "deadline": "x"}, "p: unexpected key 'deadline'"),
        # an impossible time
        ({"at": "9h"}, "p.at: must be 'HH:MM'"),
        # an unknown zone
        ({"at": "09:00", "timezone": "Mars/Olympus"}, "p.timezone: unknown time zone"),
        # a negative duration
        ({"validation_seconds": -1}, "p.validation_seconds: must be an integer between 0"),
        # a boolean is not a count
        ({"days_after": True}, "p.days_after: must be an integer between 0"),
    ],
)
def test_a_bad_declared_delivery_names_the_field(value: object, message: str) -> None:
    """Bad input in the param is a FieldError naming the field."""
    with pytest.raises(FieldError, match=message.replace(".", r"\.")):
        parse_delivery("p", value)


def test_a_datetime_subclass_anchor_resolves_to_an_aware_plain_datetime() -> None:
    """A worker's anchor is pendulum's DateTime (a subclass): the deadline is still aware."""

    class Subclass(datetime):
        """Stands for pendulum.DateTime, whose replace() the policy core must not rely on."""

    anchor = Subclass(2026, 12, 3, tzinfo=timezone.utc)
    resolved = parse_delivery("p", {"at": "09:00", "timezone": "UTC"}).resolve(anchor)
    assert type(resolved) is datetime and resolved == datetime(2026, 12, 4, 9, 0, tzinfo=timezone.utc)
