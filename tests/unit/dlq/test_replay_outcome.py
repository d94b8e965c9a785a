"""Whether a successful try can be a replay's outcome, decided from the context alone."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from airflow_retry_provider.dlq.callback import may_be_replay_outcome

MISSING = object()


def _context(try_number: Any, max_tries: Any, retries: Any) -> dict[str, Any]:
    """A success context as the task runner builds it; MISSING leaves the attribute out."""
    ti = SimpleNamespace(dag_id="sales", run_id="manual__1", task_id="load", map_index=-1)
    if try_number is not MISSING:
        ti.try_number = try_number
    if max_tries is not MISSING:
        ti.max_tries = max_tries
    task = SimpleNamespace() if retries is MISSING else SimpleNamespace(retries=retries)
    return {"ti": ti, "task": task}


@pytest.mark.parametrize(
    ("try_number", "max_tries", "retries", "expected"),
    [
        (1, 1, 1, False),  # first generation, first try: the happy path
        (2, 1, 1, False),  # first generation, after one retry (the bench's shape)
        (3, 2, 2, False),  # first generation, the last retry
        (1, 0, 0, False),  # retries=0, first try
        (1, 5, 1, False),  # try 1 is never a replay's, whatever max_tries says
        (1, MISSING, MISSING, False),  # try 1 needs nothing else to decide
        (2, 2, 1, True),  # cleared once after try 1 (max_tries = 1 + retries): a replay's outcome
        (3, 2, 1, True),  # cleared after try 1, succeeded on its retry
        (5, 6, 2, True),  # cleared after try 4 of a task with 2 retries
        (2, 1, 0, True),  # cleared after try 1 of a task without retries
        (2, 3, 1, True),  # max_tries above retries: cleared, or retries lowered since; the lookup decides
        (2, 1, 3, False),  # retries raised since the task instance was created: still first generation
        (2, MISSING, 1, True),  # no max_tries: fall back to the lookup
        (2, None, 1, True),  # max_tries None: the lookup
        (2, 2, MISSING, True),  # no retries on the task: the lookup
        (MISSING, 1, 1, False),  # no try number, but max_tries <= retries: first generation
        (MISSING, MISSING, 1, True),  # nothing to go by: the lookup
        (True, True, 1, True),  # booleans are not counts: the lookup
    ],
)
def test_may_be_replay_outcome(try_number, max_tries, retries, expected):
    """Only a try after a clear (max_tries > retries, try >= 2), or one that cannot be told, may be a replay's."""
    assert may_be_replay_outcome(_context(try_number, max_tries, retries)) is expected


def test_no_task_instance_means_the_lookup():
    """A context without a task instance cannot rule a replay out."""
    assert may_be_replay_outcome({}) is True
