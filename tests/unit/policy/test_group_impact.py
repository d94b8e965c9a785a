"""policy/group_impact.py: a root cause's letters' impacts summed and deduplicated."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from airflow_retry_provider.policy.group_impact import merge_impacts
from airflow_retry_provider.policy.impact import MAX_NAMES, Delivery, Impact, Names
from airflow_retry_provider.states import DeliveryStatus

DEADLINE = datetime(2026, 12, 4, 9, 0, tzinfo=timezone.utc)


def _delivery(task_id: str, path_minutes: int) -> Delivery:
    path = timedelta(minutes=path_minutes)
    return Delivery("gold", task_id, DEADLINE, path, DEADLINE - path, DeliveryStatus.AT_RISK)


def test_lists_are_united_and_a_shared_delivery_counted_once_with_the_strictest_time():
    """Two letters blocking overlapping tasks and one delivery: the union, one delivery at the earliest latest time."""
    first = Impact(
        blocked_tasks=Names.of(["etl.a", "etl.b"]),
        workspaces=Names.of(["acme"]),
        deliveries=(_delivery("report", 60),),
        delivery_count=1,
    )
    second = Impact(
        blocked_tasks=Names.of(["etl.b", "etl.c"]),
        workspaces=Names.of(["acme", "beta"]),
        deliveries=(_delivery("report", 90), _delivery("archive", 10)),
        delivery_count=2,
    )
    group = merge_impacts([first, second])
    assert (group.letters, group.exact) == (2, True)
    assert group.impact.blocked_tasks == Names(3, ("etl.a", "etl.b", "etl.c"))
    assert group.impact.workspaces == Names(2, ("acme", "beta"))
    assert [(d.name, d.latest_replay) for d in group.impact.deliveries] == [
        ("gold.report", DEADLINE - timedelta(minutes=90)),  # the second letter's longer path decides
        ("gold.archive", DEADLINE - timedelta(minutes=10)),
    ]
    assert group.impact.delivery_count == 2


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        # both lists cut, same first names (and etl.zzz): at least the larger count, never the sum
        ((MAX_NAMES + 5, MAX_NAMES + 2), MAX_NAMES + 5),
        # one list cut at MAX_NAMES + 1 beside etl.zzz: the union seen (11 names) equals its count
        ((MAX_NAMES + 1, 0), MAX_NAMES + 1),
    ],
)
def test_a_cut_list_gives_a_lower_bound_marked_inexact(counts, expected):
    """When a letter's list was cut, the group's count is a lower bound and ``exact`` is False."""
    names = [f"etl.t{i:03d}" for i in range(MAX_NAMES)]
    impacts = [Impact(blocked_tasks=Names(count, tuple(names))) for count in counts if count]
    impacts.append(Impact(blocked_tasks=Names.of(["etl.zzz"])))
    group = merge_impacts(impacts)
    assert group.exact is False
    assert group.impact.blocked_tasks.count == expected


def test_no_impact_is_an_empty_group():
    """A group none of whose letters has an impact yet: nothing blocked, zero letters."""
    group = merge_impacts([])
    assert (group.letters, group.impact.blocked_tasks.count, group.exact) == (0, 0, True)
