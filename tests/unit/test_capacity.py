"""The dependency map and its parse-time checks: unknown dependencies and oversized weights are errors."""

from __future__ import annotations

import pendulum
import pytest
from airflow.sdk import DAG, task

from airflow_retry_provider.capacity import (
    CapacityError,
    Dependency,
    DependencyMap,
    apply_capacity,
    example_dependencies_path,
    load_dependencies,
    plan_pools,
    set_dependencies,
    uses,
)
from airflow_retry_provider.operators import SqlTransformOperator

POSITIONS = DependencyMap.of(
    Dependency("positions_db", 2, description="one heavy or two light"),
    weights={"heavy": 2, "light": 1, "huge": 3},
)


@pytest.mark.parametrize(
    ("dependency", "weight", "expected"),
    [
        ("positions_db", "light", {"pool": "positions_db", "pool_slots": 1}),  # two of these fit at once
        ("positions_db", "heavy", {"pool": "positions_db", "pool_slots": 2}),  # one of these takes it all
        ("positions_db", 2, {"pool": "positions_db", "pool_slots": 2}),  # a plain number of slots
    ],
)
def test_uses_gives_pool_and_slots(dependency, weight, expected):
    """A known dependency and a weight that fits become pool and pool_slots."""
    assert uses(dependency, weight, dependencies=POSITIONS) == expected


@pytest.mark.parametrize(
    ("dependency", "weight", "message"),
    [
        ("positions", "light", "unknown dependency 'positions'; known dependencies: positions_db"),  # typo
        ("positions_db", "huge", "weight 'huge' (3 slots) is larger than dependency 'positions_db'"),  # 3 > 2
        (
            "positions_db",
            5,
            "weight 5 is larger than dependency 'positions_db' (pool of 2 slots)",
        ),  # a number
        (
            "positions_db",
            "medium",
            "unknown weight 'medium'; known weights: heavy=2, huge=3, light=1",
        ),  # no name
        ("positions_db", 0, "weight must be a weight name or an integer >= 1"),  # zero slots never runs
    ],
)
def test_uses_refuses_what_could_never_run(dependency, weight, message):
    """An unknown dependency or weight, or a weight above the pool, is a clear CapacityError."""
    with pytest.raises(CapacityError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        uses(dependency, weight, dependencies=POSITIONS)


def test_operator_with_oversized_weight_fails_when_the_dag_is_parsed():
    """An operator's dependency= and weight= are checked in its constructor, naming the task."""
    with pytest.raises(CapacityError, match="task 'gold': weight 'huge' .* dependency 'positions_db'"):
        with DAG("capacity_parse", schedule=None, start_date=pendulum.datetime(2026, 1, 1)):
            SqlTransformOperator(
                task_id="gold", sql="SELECT 1", layer="gold", dependency="positions_db", weight="huge",
                dependencies=POSITIONS,
            )  # fmt: skip


def test_operator_and_task_get_pool_and_slots():
    """dependency= on an operator and apply_capacity on a @task result set pool and pool_slots."""
    with DAG("capacity_ok", schedule=None, start_date=pendulum.datetime(2026, 1, 1)):
        op = SqlTransformOperator(
            task_id="silver", sql="SELECT 1", layer="silver", dependency="positions_db", weight="heavy",
            dependencies=POSITIONS,
        )  # fmt: skip

        @task
        def small() -> int:
            return 1

        call = apply_capacity(small(), "positions_db", "light", dependencies=POSITIONS)
    assert (op.pool, op.pool_slots) == ("positions_db", 2)
    assert (call.operator.pool, call.operator.pool_slots) == ("positions_db", 1)


def test_apply_capacity_on_task_names_the_task():
    """A @task using an unknown dependency fails at parse time with its task id in the message."""
    with DAG("capacity_task", schedule=None, start_date=pendulum.datetime(2026, 1, 1)):

        @task
        def extract() -> int:
            return 1

        with pytest.raises(CapacityError, match="task 'extract': unknown dependency 'crm_api'"):
            apply_capacity(extract(), "crm_api", dependencies=POSITIONS)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "dependencies: {db: {slots: 0}}",
            "slots must be an integer >= 1",
        ),  # a pool that never runs anything
        ("dependencies: {db: {cap: 2}}", "unknown keys \\['cap'\\]"),  # a typo is not silently ignored
        ("dependencies: {db: {include_deferred: true}}", "needs 'slots'"),  # slots are mandatory
        ("weights: {heavy: -1}", "weight 'heavy' must be an integer >= 1"),  # negative weight
        ("pools: {}", "unknown top-level keys"),  # wrong top-level name
        ("dependencies: [a, b]", "'dependencies' must map names"),  # a list, not a mapping
        ("dependencies: {db: {slots: 2", "not valid YAML"),  # broken YAML
    ],
)
def test_bad_yaml_is_refused(text, message):
    """A malformed dependency map is a CapacityError naming the problem."""
    with pytest.raises(CapacityError, match=message):
        DependencyMap.from_yaml(text, "deps.yaml")


def test_example_file_declares_the_positions_database():
    """The shipped example: positions_db takes one heavy (2) or two light (1) at a time."""
    deps = load_dependencies(example_dependencies_path())
    assert deps.dependencies["positions_db"].slots == 2
    assert deps.weights["heavy"] == 2 and deps.weights["light"] == 1
    assert deps.dependencies["positions_db"].include_deferred is False
    assert deps.dependencies["partner_api"].include_deferred is True


def test_registered_map_and_env_file_are_the_defaults(monkeypatch, tmp_path):
    """Without dependencies=, the registered map is used, else AIRFLOW__RETRY_PROVIDER__DEPENDENCIES_FILE."""
    path = tmp_path / "deps.yaml"
    path.write_text("dependencies: {crm: {slots: 3}}")
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__DEPENDENCIES_FILE", str(path))
    assert uses("crm", 3) == {"pool": "crm", "pool_slots": 3}
    set_dependencies(POSITIONS)
    try:
        assert uses("positions_db") == {"pool": "positions_db", "pool_slots": 1}
    finally:
        set_dependencies(None)
    monkeypatch.delenv("AIRFLOW__RETRY_PROVIDER__DEPENDENCIES_FILE")
    with pytest.raises(CapacityError, match="no dependency map"):
        uses("crm")


def test_plan_reports_create_update_and_in_sync():
    """Pools are compared field by field: missing ones are created, drifted ones updated."""
    deps = DependencyMap.of(
        Dependency("a", 2, description="x"), Dependency("b", 3, True), Dependency("c", 1, description="")
    )
    existing = {
        "b": {"name": "b", "slots": 1, "include_deferred": True, "description": ""},
        "c": {"name": "c", "slots": 1, "include_deferred": False, "description": None},
        "unmanaged": {"name": "unmanaged", "slots": 9},
    }
    changes = {change.pool: change for change in plan_pools(deps, existing)}
    assert [changes[name].action for name in "abc"] == ["create", "update", "ok"]
    assert changes["b"].describe() == "update b: slots 1 -> 3"
    assert "unmanaged" not in changes


# -- the breaker's settings in the map, and the guard apply_capacity wires ------------------------


def test_the_map_carries_each_dependency_breaker_and_names_a_bad_one():
    """``breaker:`` true, a mapping or left out; a bad value names the map, the dependency, the field and the value."""
    from airflow_retry_provider.policy.breaker import BreakerSettings

    parsed = DependencyMap.from_dict(
        {
            "dependencies": {
                "a": {"slots": 1, "breaker": True},
                "b": {"slots": 1, "breaker": {"min_failures": 3}},
                "c": 1,
            }
        }
    )
    assert parsed.dependencies["a"].breaker == BreakerSettings()
    assert parsed.dependencies["b"].breaker == BreakerSettings(min_failures=3)
    assert not parsed.dependencies["c"].breaker.enabled
    assert DependencyMap.from_dict(parsed.to_dict()) == parsed
    with pytest.raises(CapacityError) as caught:
        DependencyMap.from_dict(
            {"dependencies": {"a": {"slots": 1, "breaker": {"cooldown_seconds": 0}}}}, "deps.yaml"
        )
    assert str(caught.value) == (
        "deps.yaml: dependency 'a': breaker.cooldown_seconds must be an integer from 1 to 604800, got 0"
    )


def test_apply_capacity_guards_a_task_and_a_mapped_task_once_and_keeps_their_callbacks():
    """With a breaker: a pre_execute hook and the three callbacks, once even when applied twice; without: none."""
    from airflow_retry_provider.breaker import guard
    from airflow_retry_provider.policy.breaker import BreakerSettings

    guarded = DependencyMap.of(Dependency("positions_db", 2, breaker=BreakerSettings()))

    def mine(context):
        return None

    with DAG("guarded", schedule=None, start_date=pendulum.datetime(2026, 1, 1)):

        @task(on_success_callback=mine)
        def read() -> None: ...

        @task
        def part(n: int) -> None: ...

        single = apply_capacity(read(), "positions_db", dependencies=guarded)
        apply_capacity(single, "positions_db", dependencies=guarded)
        mapped = apply_capacity(part.expand(n=[1, 2]), "positions_db", dependencies=guarded)
        plain = apply_capacity(read.override(task_id="plain")(), "positions_db", dependencies=POSITIONS)

    hook = single.operator._pre_execute_hook
    assert isinstance(hook, guard.BeforeTry) and hook.previous is None and hook.dependency == "positions_db"
    assert single.operator.on_success_callback == [mine, guard.on_success]
    assert single.operator.on_retry_callback == [guard.on_failure]
    assert isinstance(mapped.operator.partial_kwargs["pre_execute"], guard.BeforeTry)
    assert plain.operator._pre_execute_hook is None and plain.operator.on_retry_callback == []
