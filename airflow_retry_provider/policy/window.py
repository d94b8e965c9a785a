"""The retry-window planner: the operator's what-if tool behind ``airflow-retry policy decide``.

Given a case (a clock reading ``asOf``, a ``deadline``, a retry ``policy`` and what is known of
each task), :func:`plan` says what to do next with each task. It only decides: it runs no job,
proves nothing about idempotency and guarantees no completion, so the summary flags
``jobsExecuted``, ``idempotencyProven``, ``completionGuaranteed`` and ``productionApproval``
are always false. All times are integer seconds on one common clock.

Decision for one task, first rule that applies:

1. ``asOf - observedAt > maxObservationAge`` -> ``refresh-observation`` (an observation exactly
   ``maxObservationAge`` old is still fresh);
2. state ``running`` -> ``observe-running``; ``unknown`` -> ``reconcile-remote``;
   ``succeeded`` -> ``validate-output``; ``terminal`` -> ``repair-cause``;
3. ``attempts >= maxAttempts`` -> ``attempts-exhausted``;
4. not ``safeRepeat`` -> ``reconcile-effects``;
5. ``backoff = min(maxDelay, initialDelay * multiplier ** (attempts - 1))``,
   ``earliestStart = max(asOf, lastFinishedAt + backoff)``,
   ``estimatedFinish = earliestStart + duration + validation``; then
   ``estimatedFinish > deadline`` -> ``deadline-infeasible``, ``earliestStart > asOf`` ->
   ``wait-backoff``, else ``retry-eligible``.

A task's decision depends only on that task, the policy and the clock, never on the others.
"""

from __future__ import annotations

import re
from typing import Any

from airflow_retry_provider.policy.fields import FieldError, show

MAX_TIME = 10**9
MAX_SECONDS = 10**6
MAX_TASKS = 20
MAX_ATTEMPTS = 10
MAX_MULTIPLIER = 5
STATES = ("running", "unknown", "succeeded", "retryable", "terminal")

CASE_KEYS = frozenset({"asOf", "deadline", "maxObservationAge", "policy", "tasks"})
POLICY_KEYS = frozenset({"maxAttempts", "initialDelay", "maxDelay", "multiplier"})
TASK_KEYS = frozenset(
    {"id", "state", "safeRepeat", "attempts", "observedAt", "lastFinishedAt", "duration", "validation"}
)
_ID_PATTERN = r"[A-Za-z0-9_-]{1,48}"  # `re` compiles it on first use


class PlanInputError(FieldError):
    """The case is invalid: ``path`` names the field (e.g. ``tasks[2].observedAt``), ``value`` what it held."""

    def __init__(self, path: str, problem: str, value: object, *, got: str | None = None) -> None:
        super().__init__(f"{problem}, {got or 'got ' + show(value, as_json=True)}", path=path)
        self.problem = problem
        self.value = value


def _object(path: str, value: object, keys: frozenset[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PlanInputError(path, "must be an object", value)
    missing = sorted(keys - value.keys())
    if missing:
        needed = ", ".join(sorted(keys))
        has = ", ".join(sorted(map(str, value))) or "nothing"
        raise PlanInputError(
            path, f'missing "{missing[0]}" (it needs {needed})', sorted(value), got=f"it has {has}"
        )
    unexpected = sorted(str(key) for key in value.keys() - keys)
    if unexpected:
        raise PlanInputError(path, f"unexpected key {unexpected[0]!r}", sorted(map(str, value)))
    return value


def _integer(path: str, value: object, low: int, high: int, bound: str = "") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PlanInputError(path, "must be an integer", value)
    if not low <= value <= high:
        raise PlanInputError(path, f"must be between {low} and {bound or high}", value)
    return value


def _check_policy(value: object) -> dict[str, Any]:
    policy = _object("policy", value, POLICY_KEYS)
    _integer("policy.maxAttempts", policy["maxAttempts"], 1, MAX_ATTEMPTS)
    initial = _integer("policy.initialDelay", policy["initialDelay"], 1, MAX_SECONDS)
    max_delay = _integer("policy.maxDelay", policy["maxDelay"], 1, MAX_SECONDS)
    if max_delay < initial:
        raise PlanInputError("policy.maxDelay", f"must be >= policy.initialDelay ({initial})", max_delay)
    _integer("policy.multiplier", policy["multiplier"], 1, MAX_MULTIPLIER)
    return policy


def _check_task(path: str, value: object, as_of: int) -> dict[str, Any]:
    task = _object(path, value, TASK_KEYS)
    task_id = task["id"]
    if not isinstance(task_id, str) or not re.fullmatch(_ID_PATTERN, task_id):
        raise PlanInputError(f"{path}.id", "must be 1-48 letters, digits, '_' or '-'", task_id)
    state = task["state"]
    if not isinstance(state, str) or state not in STATES:
        raise PlanInputError(f"{path}.state", f"must be one of {', '.join(STATES)}", state)
    if not isinstance(task["safeRepeat"], bool):
        raise PlanInputError(f"{path}.safeRepeat", "must be a boolean", task["safeRepeat"])
    _integer(f"{path}.attempts", task["attempts"], 1, MAX_ATTEMPTS)
    observed = _integer(f"{path}.observedAt", task["observedAt"], 0, as_of, f"asOf ({as_of})")
    finished = task["lastFinishedAt"]
    if state in ("running", "unknown"):
        if finished is not None:
            raise PlanInputError(f"{path}.lastFinishedAt", f"must be null when state is {state}", finished)
    elif finished is None:
        raise PlanInputError(f"{path}.lastFinishedAt", f"must be an integer when state is {state}", finished)
    else:
        _integer(f"{path}.lastFinishedAt", finished, 0, observed, f"observedAt ({observed})")
    _integer(f"{path}.duration", task["duration"], 1, MAX_SECONDS)
    _integer(f"{path}.validation", task["validation"], 0, MAX_SECONDS)
    return task


def validate(case: object) -> dict[str, Any]:
    """Check ``case`` strictly and return it; PlanInputError names the first bad field."""
    checked = _object("input", case, CASE_KEYS)
    as_of = _integer("asOf", checked["asOf"], 0, MAX_TIME)
    _integer("deadline", checked["deadline"], 0, MAX_TIME)
    _integer("maxObservationAge", checked["maxObservationAge"], 0, MAX_TIME)
    _check_policy(checked["policy"])
    tasks = checked["tasks"]
    if not isinstance(tasks, list):
        raise PlanInputError("tasks", "must be an array", tasks)
    if not 1 <= len(tasks) <= MAX_TASKS:
        raise PlanInputError("tasks", f"must hold 1 to {MAX_TASKS} tasks", len(tasks))
    seen: dict[str, int] = {}
    for index, value in enumerate(tasks):
        task = _check_task(f"tasks[{index}]", value, as_of)
        if task["id"] in seen:
            raise PlanInputError(f"tasks[{index}].id", f"duplicates tasks[{seen[task['id']]}].id", task["id"])
        seen[task["id"]] = index
    return checked


def decide_task(
    task: dict[str, Any], policy: dict[str, Any], as_of: int, deadline: int, max_age: int
) -> dict[str, Any]:
    """The decision for one validated task (see the module docstring)."""
    result: dict[str, Any] = {
        "id": task["id"],
        "decision": None,
        "backoff": None,
        "earliestStart": None,
        "estimatedFinish": None,
    }
    state = task["state"]
    if as_of - task["observedAt"] > max_age:
        result["decision"] = "refresh-observation"
    elif state == "running":
        result["decision"] = "observe-running"
    elif state == "unknown":
        result["decision"] = "reconcile-remote"
    elif state == "succeeded":
        result["decision"] = "validate-output"
    elif state == "terminal":
        result["decision"] = "repair-cause"
    elif task["attempts"] >= policy["maxAttempts"]:
        result["decision"] = "attempts-exhausted"
    elif not task["safeRepeat"]:
        result["decision"] = "reconcile-effects"
    else:
        backoff = min(
            policy["maxDelay"], policy["initialDelay"] * policy["multiplier"] ** (task["attempts"] - 1)
        )
        earliest_start = max(as_of, task["lastFinishedAt"] + backoff)
        estimated_finish = earliest_start + task["duration"] + task["validation"]
        if estimated_finish > deadline:
            result["decision"] = "deadline-infeasible"
        elif earliest_start > as_of:
            result["decision"] = "wait-backoff"
        else:
            result["decision"] = "retry-eligible"
        result.update(backoff=backoff, earliestStart=earliest_start, estimatedFinish=estimated_finish)
    return result


def plan(case: object) -> dict[str, Any]:
    """Validate ``case`` and decide every task; raises PlanInputError on invalid input.

    The result holds ``tasks`` (sorted by id, each ``id``, ``decision``, ``backoff``,
    ``earliestStart``, ``estimatedFinish``; the last three null unless computed),
    ``deadlinePassed`` (``asOf > deadline``) and four flags that are always false because the
    planner only decides: ``jobsExecuted`` (it ran nothing), ``idempotencyProven`` (``safeRepeat``
    is the operator's claim, not a proof), ``completionGuaranteed`` (an estimate is not a promise)
    and ``productionApproval`` (a plan is not an approval to act in production).
    """
    checked = validate(case)
    as_of, deadline, max_age = checked["asOf"], checked["deadline"], checked["maxObservationAge"]
    decisions = [decide_task(task, checked["policy"], as_of, deadline, max_age) for task in checked["tasks"]]
    return {
        "tasks": sorted(decisions, key=lambda decision: decision["id"]),
        "deadlinePassed": as_of > deadline,
        "jobsExecuted": False,
        "idempotencyProven": False,
        "completionGuaranteed": False,
        "productionApproval": False,
    }
