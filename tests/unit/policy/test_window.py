"""The retry-window planner: one case per decision, boundaries, strict validation, order independence."""

from __future__ import annotations

import copy
import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_retry_provider.policy import PlanInputError, plan

POLICY = {"maxAttempts": 3, "initialDelay": 100, "maxDelay": 1000, "multiplier": 2}


def task(**overrides: Any) -> dict[str, Any]:
    """A retryable task that failed at 800, seen at 1000: retry-eligible at asOf=1000."""
    base = {
        "id": "t1",
        "state": "retryable",
        "safeRepeat": True,
        "attempts": 1,
        "observedAt": 1000,
        "lastFinishedAt": 800,
        "duration": 100,
        "validation": 10,
    }
    return {**base, **overrides}


def case(*tasks: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    base = {
        "asOf": 1000,
        "deadline": 10_000,
        "maxObservationAge": 60,
        "policy": dict(POLICY),
        "tasks": list(tasks) or [task()],
    }
    return {**base, **overrides}


def only(result: dict[str, Any]) -> dict[str, Any]:
    (decision,) = result["tasks"]
    return decision


def decision_of(one_task: dict[str, Any], **case_overrides: Any) -> str:
    return str(only(plan(case(one_task, **case_overrides)))["decision"])


@pytest.mark.parametrize(
    ("one_task", "case_overrides", "expected"),
    [
        (task(observedAt=939), {}, "refresh-observation"),  # 61 s old with a 60 s limit
        (
            task(state="running", observedAt=900, lastFinishedAt=None),
            {},
            "refresh-observation",
        ),  # stale beats state
        (task(state="running", lastFinishedAt=None), {}, "observe-running"),  # still running
        (task(state="unknown", lastFinishedAt=None), {}, "reconcile-remote"),  # outcome unknown
        (task(state="succeeded"), {}, "validate-output"),  # done: check the output
        (task(state="terminal"), {}, "repair-cause"),  # poison: fix the cause
        (task(state="terminal", attempts=3), {}, "repair-cause"),  # state beats exhaustion
        (task(attempts=3), {}, "attempts-exhausted"),  # 3 of 3 started
        (task(attempts=3, safeRepeat=False), {}, "attempts-exhausted"),  # exhaustion beats safeRepeat
        (task(safeRepeat=False), {}, "reconcile-effects"),  # repeating could duplicate effects
        (task(lastFinishedAt=950), {}, "wait-backoff"),  # backoff ends at 1050
        (task(), {"deadline": 1109}, "deadline-infeasible"),  # would finish at 1110
        (task(lastFinishedAt=950), {"deadline": 1159}, "deadline-infeasible"),  # deadline beats waiting
        (task(), {}, "retry-eligible"),  # backoff over, time enough
    ],
)
def test_decisions(one_task: dict[str, Any], case_overrides: dict[str, Any], expected: str) -> None:
    """Each rule of the planner gives its decision, in the documented order."""
    assert decision_of(one_task, **case_overrides) == expected


def test_retry_eligible_output() -> None:
    """A computed decision carries backoff, earliestStart and estimatedFinish."""
    assert plan(case()) == {
        "tasks": [
            {
                "id": "t1",
                "decision": "retry-eligible",
                "backoff": 100,
                "earliestStart": 1000,
                "estimatedFinish": 1110,
            }
        ],
        "deadlinePassed": False,
        "jobsExecuted": False,
        "idempotencyProven": False,
        "completionGuaranteed": False,
        "productionApproval": False,
    }


def test_wait_backoff_output() -> None:
    """earliestStart = lastFinishedAt + backoff when that is after asOf."""
    result = only(plan(case(task(attempts=2, lastFinishedAt=900))))
    assert result == {
        "id": "t1",
        "decision": "wait-backoff",
        "backoff": 200,
        "earliestStart": 1100,
        "estimatedFinish": 1210,
    }


def test_deadline_infeasible_output() -> None:
    """deadline-infeasible still reports the computed times."""
    result = only(plan(case(task(), deadline=1000)))
    assert (result["backoff"], result["earliestStart"], result["estimatedFinish"]) == (100, 1000, 1110)


def test_uncomputed_fields_are_null() -> None:
    """Decisions taken before the backoff rule leave backoff and times null."""
    result = only(plan(case(task(state="succeeded"))))
    assert result == {
        "id": "t1",
        "decision": "validate-output",
        "backoff": None,
        "earliestStart": None,
        "estimatedFinish": None,
    }


def test_backoff_is_capped() -> None:
    """backoff = min(maxDelay, initialDelay * multiplier ** (attempts - 1))."""
    policy = {"maxAttempts": 10, "initialDelay": 100, "maxDelay": 1000, "multiplier": 5}
    assert only(plan(case(task(attempts=9), policy=policy)))["backoff"] == 1000
    assert only(plan(case(task(attempts=2), policy=policy)))["backoff"] == 500


def test_observation_exactly_max_age_is_fresh() -> None:
    """An observation exactly maxObservationAge old is still fresh."""
    assert decision_of(task(observedAt=940)) == "retry-eligible"
    assert decision_of(task(observedAt=0, lastFinishedAt=0), maxObservationAge=1000) == "retry-eligible"


def test_finish_exactly_at_deadline_is_feasible() -> None:
    """estimatedFinish == deadline is feasible."""
    assert decision_of(task(), deadline=1110) == "retry-eligible"


def test_earliest_start_exactly_now_is_eligible() -> None:
    """lastFinishedAt + backoff == asOf: no waiting."""
    assert decision_of(task(lastFinishedAt=900)) == "retry-eligible"


@pytest.mark.parametrize(
    ("as_of", "deadline", "passed"), [(1000, 999, True), (1000, 1000, False), (1000, 1001, False)]
)
def test_deadline_passed(as_of: int, deadline: int, passed: bool) -> None:
    """deadlinePassed is asOf > deadline."""
    assert plan(case(task(), asOf=as_of, deadline=deadline))["deadlinePassed"] is passed


def test_tasks_sorted_by_id() -> None:
    """Output tasks are sorted by id."""
    result = plan(case(task(id="b"), task(id="a-2"), task(id="B"), task(id="a_1")))
    assert [t["id"] for t in result["tasks"]] == ["B", "a-2", "a_1", "b"]


def set_path(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    """A deep copy of ``document`` with ``path`` set to ``value`` (or removed when value is DELETE)."""
    result = copy.deepcopy(document)
    target = result
    for key in path[:-1]:
        target = target[key]
    if value is DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return result


DELETE = object()
TWO = case(task(id="a"), task(id="b"))

BAD_INPUT = [
    # the whole input
    ((), [], "input"),  # an array, not an object
    (("asOf",), DELETE, "input"),  # missing key
    (("extra",), 1, "input"),  # unexpected key
    # asOf
    (("asOf",), "1000", "asOf"),  # a string
    (("asOf",), 1000.0, "asOf"),  # a float
    (("asOf",), True, "asOf"),  # a bool is not an integer
    (("asOf",), -1, "asOf"),  # below 0
    (("asOf",), 10**9 + 1, "asOf"),  # above 1e9
    # deadline
    (("deadline",), None, "deadline"),  # null
    (("deadline",), -1, "deadline"),  # below 0
    (("deadline",), 10**9 + 1, "deadline"),  # above 1e9
    (("deadline",), False, "deadline"),  # a bool
    # maxObservationAge
    (("maxObservationAge",), -1, "maxObservationAge"),  # below 0
    (("maxObservationAge",), 10**9 + 1, "maxObservationAge"),  # above 1e9
    (("maxObservationAge",), 1.5, "maxObservationAge"),  # a float
    # policy
    (("policy",), [], "policy"),  # not an object
    (("policy", "maxAttempts"), DELETE, "policy"),  # missing key
    (("policy", "retries"), 2, "policy"),  # unexpected key
    (("policy", "maxAttempts"), 0, "policy.maxAttempts"),  # below 1
    (("policy", "maxAttempts"), 11, "policy.maxAttempts"),  # above 10
    (("policy", "maxAttempts"), True, "policy.maxAttempts"),  # a bool
    (("policy", "initialDelay"), 0, "policy.initialDelay"),  # below 1
    (("policy", "initialDelay"), 10**6 + 1, "policy.initialDelay"),  # above 1e6
    (("policy", "initialDelay"), "100", "policy.initialDelay"),  # a string
    (("policy", "maxDelay"), 99, "policy.maxDelay"),  # below initialDelay
    (("policy", "maxDelay"), 10**6 + 1, "policy.maxDelay"),  # above 1e6
    (("policy", "maxDelay"), None, "policy.maxDelay"),  # null
    (("policy", "multiplier"), 0, "policy.multiplier"),  # below 1
    (("policy", "multiplier"), 6, "policy.multiplier"),  # above 5
    (("policy", "multiplier"), 1.5, "policy.multiplier"),  # not an integer
    (("policy", "multiplier"), True, "policy.multiplier"),  # a bool
    # tasks
    (("tasks",), {}, "tasks"),  # not an array
    (("tasks",), [], "tasks"),  # empty
    (("tasks",), [task(id=f"t{n}") for n in range(21)], "tasks"),  # 21 tasks
    (("tasks", 1), "b", "tasks[1]"),  # a task that is not an object
    (("tasks", 1, "duration"), DELETE, "tasks[1]"),  # missing key
    (("tasks", 1, "priority"), 1, "tasks[1]"),  # unexpected key
    # tasks[].id
    (("tasks", 1, "id"), "", "tasks[1].id"),  # empty
    (("tasks", 1, "id"), "x" * 49, "tasks[1].id"),  # 49 characters
    (("tasks", 1, "id"), "load sales", "tasks[1].id"),  # a space
    (("tasks", 1, "id"), "tâche", "tasks[1].id"),  # not ASCII
    (("tasks", 1, "id"), 7, "tasks[1].id"),  # a number
    (("tasks", 1, "id"), "a", "tasks[1].id"),  # duplicates tasks[0]
    # tasks[].state
    (("tasks", 1, "state"), "failed", "tasks[1].state"),  # not a known state
    (("tasks", 1, "state"), "Retryable", "tasks[1].state"),  # case matters
    (("tasks", 1, "state"), None, "tasks[1].state"),  # null
    # tasks[].safeRepeat
    (("tasks", 1, "safeRepeat"), 1, "tasks[1].safeRepeat"),  # an integer is not a boolean
    (("tasks", 1, "safeRepeat"), "true", "tasks[1].safeRepeat"),  # a string
    # tasks[].attempts
    (("tasks", 1, "attempts"), 0, "tasks[1].attempts"),  # below 1
    (("tasks", 1, "attempts"), 11, "tasks[1].attempts"),  # above 10
    (("tasks", 1, "attempts"), True, "tasks[1].attempts"),  # a bool
    # tasks[].observedAt
    (("tasks", 1, "observedAt"), 1001, "tasks[1].observedAt"),  # a future observation
    (("tasks", 1, "observedAt"), -1, "tasks[1].observedAt"),  # below 0
    (("tasks", 1, "observedAt"), "1000", "tasks[1].observedAt"),  # a string
    # tasks[].lastFinishedAt
    (("tasks", 1, "lastFinishedAt"), None, "tasks[1].lastFinishedAt"),  # null for a retryable task
    (("tasks", 1, "lastFinishedAt"), 1001, "tasks[1].lastFinishedAt"),  # after observedAt
    (("tasks", 1, "lastFinishedAt"), -1, "tasks[1].lastFinishedAt"),  # below 0
    (("tasks", 1, "lastFinishedAt"), True, "tasks[1].lastFinishedAt"),  # a bool
    (("tasks", 1, "lastFinishedAt"), 800.0, "tasks[1].lastFinishedAt"),  # a float
    # tasks[].duration
    (("tasks", 1, "duration"), 0, "tasks[1].duration"),  # below 1
    (("tasks", 1, "duration"), 10**6 + 1, "tasks[1].duration"),  # above 1e6
    (("tasks", 1, "duration"), False, "tasks[1].duration"),  # a bool
    # tasks[].validation
    (("tasks", 1, "validation"), -1, "tasks[1].validation"),  # below 0
    (("tasks", 1, "validation"), 10**6 + 1, "tasks[1].validation"),  # above 1e6
    (("tasks", 1, "validation"), [], "tasks[1].validation"),  # an array
]


@pytest.mark.parametrize(("path", "value", "field"), BAD_INPUT)
def test_bad_input(path: tuple[Any, ...], value: Any, field: str) -> None:
    """Every invalid field is refused with its path and the bad value in the message."""
    document = value if path == () else set_path(TWO, path, value)
    with pytest.raises(PlanInputError) as info:
        plan(document)
    assert info.value.path == field
    message = str(info.value)
    assert message.startswith(f"{field}: ")
    assert "\n" not in message
    assert ", got " in message or ", it has " in message  # a missing key says what the object has
    is_leaf = field not in ("input", "policy", "tasks", "tasks[1]")
    if is_leaf:
        assert message.endswith(f", got {json.dumps(value)}")


@pytest.mark.parametrize(
    ("state", "field_value"),
    [("running", 800), ("unknown", 0)],  # lastFinishedAt must be null while running or unknown
)
def test_last_finished_must_be_null(state: str, field_value: int) -> None:
    """lastFinishedAt is null iff the state is running or unknown."""
    with pytest.raises(
        PlanInputError, match=rf"^tasks\[0\]\.lastFinishedAt: must be null when state is {state}"
    ):
        plan(case(task(state=state, lastFinishedAt=field_value)))


def test_error_message_example() -> None:
    """The message reads field, problem, value."""
    with pytest.raises(PlanInputError) as info:
        plan(set_path(TWO, ("tasks", 1, "observedAt"), 1500))
    assert str(info.value) == "tasks[1].observedAt: must be between 0 and asOf (1000), got 1500"


@st.composite
def valid_tasks(draw: st.DrawFn, as_of: int = 5000) -> dict[str, Any]:
    state = draw(st.sampled_from(["running", "unknown", "succeeded", "retryable", "terminal"]))
    observed = draw(st.integers(0, as_of))
    finished = None if state in ("running", "unknown") else draw(st.integers(0, observed))
    return {
        "id": "",
        "state": state,
        "safeRepeat": draw(st.booleans()),
        "attempts": draw(st.integers(1, 10)),
        "observedAt": observed,
        "lastFinishedAt": finished,
        "duration": draw(st.integers(1, 3000)),
        "validation": draw(st.integers(0, 1000)),
    }


@st.composite
def cases_and_orders(draw: st.DrawFn) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    tasks = draw(st.lists(valid_tasks(), min_size=1, max_size=20))
    ids = draw(
        st.lists(
            st.from_regex(r"[A-Za-z0-9_-]{1,48}", fullmatch=True),
            min_size=len(tasks),
            max_size=len(tasks),
            unique=True,
        )
    )
    for one, task_id in zip(tasks, ids, strict=True):
        one["id"] = task_id
    initial = draw(st.integers(1, 2000))
    document = {
        "asOf": 5000,
        "deadline": draw(st.integers(0, 20_000)),
        "maxObservationAge": draw(st.integers(0, 6000)),
        "policy": {
            "maxAttempts": draw(st.integers(1, 10)),
            "initialDelay": initial,
            "maxDelay": draw(st.integers(initial, 10_000)),
            "multiplier": draw(st.integers(1, 5)),
        },
        "tasks": tasks,
    }
    return document, draw(st.permutations(tasks))


@given(cases_and_orders())
def test_order_independence(drawn: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    """Shuffling the tasks changes nothing, and each task decides alone as it does among others."""
    document, shuffled = drawn
    result = plan(document)
    assert plan({**document, "tasks": shuffled}) == result
    by_id = {decision["id"]: decision for decision in result["tasks"]}
    for one in document["tasks"]:
        assert only(plan({**document, "tasks": [one]})) == by_id[one["id"]]
    assert [decision["id"] for decision in result["tasks"]] == sorted(by_id)


@given(cases_and_orders())
def test_summary_flags_are_false(drawn: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    """The planner only decides: it never claims to have run, proven, guaranteed or approved anything."""
    result = plan(drawn[0])
    assert result["productionApproval"] is False
    assert result["jobsExecuted"] is False
    assert result["idempotencyProven"] is False
    assert result["completionGuaranteed"] is False
    assert result["deadlinePassed"] is (drawn[0]["asOf"] > drawn[0]["deadline"])


# -- the worked example, pinned -------------------------------------------------------------------


def _example_task(
    task_id: str,
    state: str,
    attempts: int,
    observed: int,
    finished: int | None,
    duration: int,
    validation: int,
) -> dict[str, Any]:
    return {
        "id": task_id,
        "state": state,
        "safeRepeat": True,
        "attempts": attempts,
        "observedAt": observed,
        "lastFinishedAt": finished,
        "duration": duration,
        "validation": validation,
    }


WORKED_TASKS = [
    _example_task("report", "retryable", 2, 100, 95, 20, 5),
    _example_task("load", "retryable", 1, 100, 90, 35, 5),
    _example_task("append", "unknown", 1, 100, None, 10, 2),
    _example_task("archive", "retryable", 4, 100, 80, 10, 2),
    _example_task("monitor", "running", 1, 89, None, 10, 0),
    _example_task("transform", "succeeded", 1, 100, 98, 10, 5),
]


def worked_case(tasks: list[dict[str, Any]] | None = None, **overrides: Any) -> dict[str, Any]:
    """The worked example: as-of 100, deadline 140, observations valid 10 s, 4 attempts, 4 s x2 up to 12 s."""
    base = {
        "asOf": 100,
        "deadline": 140,
        "maxObservationAge": 10,
        "policy": {"maxAttempts": 4, "initialDelay": 4, "maxDelay": 12, "multiplier": 2},
        "tasks": copy.deepcopy(tasks if tasks is not None else WORKED_TASKS),
    }
    return {**base, **overrides}


def _row(
    task_id: str,
    decision: str,
    backoff: int | None = None,
    start: int | None = None,
    finish: int | None = None,
) -> dict[str, Any]:
    return {
        "id": task_id,
        "decision": decision,
        "backoff": backoff,
        "earliestStart": start,
        "estimatedFinish": finish,
    }


WORKED_PLAN = {
    "tasks": [
        _row("append", "reconcile-remote"),
        _row("archive", "attempts-exhausted"),
        _row("load", "retry-eligible", 4, 100, 140),  # finishes exactly at the deadline: feasible
        _row("monitor", "refresh-observation"),  # observed 11 s ago, valid 10 s
        _row("report", "wait-backoff", 8, 103, 128),  # backoff 4 * 2 after its second attempt
        _row("transform", "validate-output"),
    ],
    "deadlinePassed": False,
    "jobsExecuted": False,
    "idempotencyProven": False,
    "completionGuaranteed": False,
    "productionApproval": False,
}


def test_worked_example_is_pinned() -> None:
    """The documented worked example gives exactly its documented plan."""
    assert plan(worked_case()) == WORKED_PLAN


def test_worked_example_is_the_same_for_all_720_orders() -> None:
    """Every one of the 6! orders of the six tasks gives the same plan."""
    orders = list(itertools.permutations(WORKED_TASKS))
    assert len(orders) == 720
    for order in orders:
        assert plan(worked_case(list(order))) == WORKED_PLAN


def _decision(result: dict[str, Any], task_id: str) -> dict[str, Any]:
    return next(row for row in result["tasks"] if row["id"] == task_id)


@pytest.mark.parametrize(
    ("overrides", "task_id", "expected"),
    [
        ({"deadline": 139}, "load", _row("load", "deadline-infeasible", 4, 100, 140)),  # one second short
        ({"asOf": 101}, "load", _row("load", "deadline-infeasible", 4, 101, 141)),  # one second later
        ({"asOf": 103}, "report", _row("report", "retry-eligible", 8, 103, 128)),  # the backoff is over
    ],
)
def test_worked_example_variations(overrides: dict[str, Any], task_id: str, expected: dict[str, Any]) -> None:
    """The worked example's boundaries: the deadline and the clock move one decision each."""
    assert _decision(plan(worked_case(**overrides)), task_id) == expected


def test_worked_example_monitor_observed_at_the_limit() -> None:
    """Observed at 90 (exactly 10 s old), the running monitor is observed, not refreshed."""
    tasks = copy.deepcopy(WORKED_TASKS)
    tasks[4]["observedAt"] = 90
    assert _decision(plan(worked_case(tasks)), "monitor")["decision"] == "observe-running"


def test_worked_example_load_not_safe_to_repeat() -> None:
    """Load not safe to repeat must reconcile its effects instead of retrying."""
    tasks = copy.deepcopy(WORKED_TASKS)
    tasks[1]["safeRepeat"] = False
    assert _decision(plan(worked_case(tasks)), "load") == _row("load", "reconcile-effects")
