"""The one validation helper, ``policy.fields``: every input checker names the bad field the same way."""

from __future__ import annotations

import pytest

from airflow_retry_provider.capacity import CapacityError, DependencyMap
from airflow_retry_provider.policy import PlanInputError, plan
from airflow_retry_provider.policy.fields import MAX_SHOWN, FieldError, at, show
from airflow_retry_provider.reconciliation import Snapshot, SnapshotError
from airflow_retry_provider.rules_file import RulesFileError, parse_rules


@pytest.mark.parametrize(
    ("path", "key", "expected"),
    [
        ("", "tasks", "tasks"),  # the top level has no leading dot
        ("tasks", 2, "tasks[2]"),  # an index is bracketed
        ("tasks[2]", "observedAt", "tasks[2].observedAt"),  # a field of an element
    ],
)
def test_at_builds_the_field_path(path: str, key: str | int, expected: str) -> None:
    """``at`` joins a path and a key the way every message names a field."""
    assert at(path, key) == expected


def test_show_is_one_shortened_line() -> None:
    """A long value is cut to MAX_SHOWN characters, JSON where asked, repr otherwise."""
    assert show("x" * 500).endswith("...") and len(show("x" * 500)) == MAX_SHOWN
    assert show([1, None], as_json=True) == "[1, null]"
    assert show([1, None]) == "[1, None]"
    assert show({1, 2}, as_json=True) == "{1, 2}"  # not JSON: its repr


def test_message_is_path_then_problem() -> None:
    """The message is ``path: problem``, or the problem alone when there is no path."""
    assert (
        str(FieldError("must be an integer", path="tasks[0].attempts"))
        == "tasks[0].attempts: must be an integer"
    )
    assert str(FieldError("no dependency map")) == "no dependency map"


def test_every_checker_raises_a_field_error_naming_the_path() -> None:
    """The planner, the reconciliation models, the capacity map and the rule file raise FieldError with its path."""
    with pytest.raises(PlanInputError) as planner:
        plan({"asOf": "soon"})
    with pytest.raises(SnapshotError) as snapshot:
        Snapshot.from_dict({"source_runs": [{"workspace_id": 7}]})
    with pytest.raises(CapacityError) as capacity:
        DependencyMap.from_dict({"dependencies": {"db": {"slots": 1, "colour": "red"}}}, "deps.yaml")
    with pytest.raises(RulesFileError) as rules:
        parse_rules("rules: 5", "rules.yaml")
    for error, path in [
        (rules, "rules.yaml: rules"),
        (planner, "input"),
        (snapshot, "source_runs[0].workspace_id"),
        (capacity, "deps.yaml"),
    ]:
        assert isinstance(error.value, FieldError) and isinstance(error.value, ValueError)
        assert error.value.path == path
        assert str(error.value).startswith(f"{path}: ")
