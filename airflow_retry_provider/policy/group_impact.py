"""What a root-cause group blocks: its letters' impacts summed and deduplicated (issue 48).

Pure. Each letter's :class:`~airflow_retry_provider.policy.impact.Impact` keeps a count and the
first :data:`~airflow_retry_provider.policy.impact.MAX_NAMES` names of each list, so a union is
exact only while every list is complete (``count == len(first)``); otherwise the group's count is
a lower bound (the largest of the letters' counts and the distinct names seen), and ``exact`` says
so. A delivery two letters block is one delivery: the earliest latest replay time (the strictest
letter) is kept, and ``letters`` counts the letters it is known for.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from airflow_retry_provider.policy.impact import MAX_DELIVERIES, NAME_LISTS, Delivery, Impact, Names


@dataclass(frozen=True)
class GroupImpact:
    """The union of a group's impacts."""

    impact: Impact = field(default_factory=Impact)
    letters: int = 0
    """Letters whose impact was computed and counted."""
    exact: bool = True
    """Every count is exact (no letter's list was cut at MAX_NAMES)."""

    def to_json(self) -> dict[str, Any]:
        return {**self.impact.to_json(), "letters": self.letters, "exact": self.exact}


def _union(lists: list[Names]) -> tuple[Names, bool]:
    names = {name for names in lists for name in names.first}
    complete = all(names_.count == len(names_.first) for names_ in lists)
    merged = Names.of(names)
    if complete:
        return merged, True
    count = max([merged.count, *(names_.count for names_ in lists)])
    return Names(count=count, first=merged.first), False


def merge_impacts(impacts: Iterable[Impact]) -> GroupImpact:
    """The group's impact: each list's union, each delivery once (its earliest latest replay time)."""
    found = list(impacts)
    if not found:
        return GroupImpact()
    exact = True
    merged: dict[str, Any] = {}
    for name in NAME_LISTS:
        merged[name], complete = _union([getattr(impact, name) for impact in found])
        exact = exact and complete
    deliveries: dict[tuple[str, object], Delivery] = {}
    for impact in found:
        exact = exact and impact.delivery_count == len(impact.deliveries)
        for delivery in impact.deliveries:
            key = (delivery.name, delivery.deadline)
            kept = deliveries.get(key)
            if kept is None or delivery.latest_replay < kept.latest_replay:
                deliveries[key] = delivery
    ordered = sorted(deliveries.values(), key=lambda d: (d.latest_replay, d.dag_id, d.task_id))
    return GroupImpact(
        impact=Impact(
            **merged,
            deliveries=tuple(ordered[:MAX_DELIVERIES]),
            delivery_count=len(ordered),
        ),
        letters=len(found),
        exact=exact,
    )
