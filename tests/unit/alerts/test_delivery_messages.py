"""The delivery alerts' words (issue 48): at risk, lost, saved, and the deliveries an outage holds."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import pytest

from airflow_retry_provider.alerts import messages
from airflow_retry_provider.policy.impact import Delivery, Impact, Names
from airflow_retry_provider.states import DeliveryStatus
from tests.factories import new_letter

DEADLINE = datetime(2026, 12, 4, 9, 0, tzinfo=timezone.utc)
DELIVERY = Delivery(
    "gold",
    "report",
    DEADLINE,
    timedelta(minutes=85),
    DEADLINE - timedelta(minutes=85),
    DeliveryStatus.AT_RISK,
)


@pytest.mark.parametrize(
    ("status", "kind", "title"),
    [
        # a replay by the latest time still delivers
        (
            DeliveryStatus.AT_RISK,
            "delivery-at-risk",
            "Delivery at risk: replay by 2026-12-04 07:35 UTC to meet",
        ),
        # past it: tell the consumers
        (
            DeliveryStatus.LOST,
            "delivery-lost",
            "Delivery lost: the 2026-12-04 09:00 UTC delivery of gold.report can no longer be met",
        ),
        # the replays made it: the note that closes the story, once
        (
            DeliveryStatus.SAVED,
            "delivery-saved",
            "Delivery saved: the 2026-12-04 09:00 UTC delivery of gold.report is on track again",
        ),
    ],
)
def test_each_status_has_its_kind_and_title(status, kind, title):
    """The kind the outbox and notifiers see, and a title that says what to do (or that nothing is left to do)."""
    delivery = Delivery(**{**DELIVERY.__dict__, "status": status})
    alert = messages.delivery_at_risk(
        new_letter(), 7, delivery, Impact(workspaces=Names.of(["acme"])), "http://af"
    )
    assert alert.kind == kind
    assert alert.title.startswith(title)


@dataclass(frozen=True)
class _Held:
    delivery: Delivery
    held: tuple[str, ...]


def test_the_outage_message_lists_each_delivery_with_its_latest_start():
    """A dependency-down message: the earliest latest start in the title, each delivery and its held tasks below."""
    lost = Delivery(
        "gold", "early", DEADLINE, timedelta(hours=12), DEADLINE - timedelta(hours=12), DeliveryStatus.LOST
    )
    held = [_Held(DELIVERY, ("etl.extract (r1)",)), _Held(lost, ("etl.load (r1)",))]
    opened = DEADLINE - timedelta(hours=6)
    alert = messages.deliveries_held("positions_db", opened, held, "http://af")
    assert alert.kind == "dependency-down"
    assert alert.title == (
        "Dependency positions_db is down: its held tasks put 2 delivery(ies) at risk; "
        "the first must start by 2026-12-04T07:35:00+00:00"
    )
    assert (
        "gold.report, due 2026-12-04T09:00:00+00:00: start by 2026-12-04T07:35:00+00:00 (held: etl.extract (r1))"
        in alert.text
    )
    assert (
        "gold.early, due 2026-12-04T09:00:00+00:00: can no longer be met (held: etl.load (r1))" in alert.text
    )
    assert alert.links["dependencies"].endswith("/dependencies?dependency=positions_db")
