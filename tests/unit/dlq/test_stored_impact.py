"""dlq/deliveries.py's stored_impact: a stored impact's text is parsed once per process, and a new text anew."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from airflow_retry_provider.dlq.deliveries import stored_impact
from airflow_retry_provider.policy.impact import Delivery, Impact, Names
from airflow_retry_provider.states import DeliveryStatus

DEADLINE = datetime(2026, 12, 5, 9, 0, tzinfo=timezone.utc)


def _text(task: str) -> str:
    path = timedelta(minutes=30)
    delivery = Delivery("gold", task, DEADLINE, path, DEADLINE - path, DeliveryStatus.AT_RISK)
    impact = Impact(blocked_tasks=Names.of([f"etl.{task}"]), deliveries=(delivery,), delivery_count=1)
    return json.dumps(impact.to_json())


def test_the_same_text_is_parsed_once_and_equals_a_fresh_parse():
    """Two reads of one stored text give the same (immutable) Impact, equal to parsing it directly."""
    text = _text("report")
    first = stored_impact(text)
    assert stored_impact(text) is first
    assert first == Impact.from_json(json.loads(text))


def test_a_recomputed_impact_is_parsed_anew():
    """Another text (a recomputed impact) is its own entry: nothing stale is returned for it."""
    before, after = stored_impact(_text("report")), stored_impact(_text("archive"))
    assert after is not before
    assert after.blocked_tasks.first == ("etl.archive",)
