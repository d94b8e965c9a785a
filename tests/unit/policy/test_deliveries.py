"""policy/deliveries.py: a delivery is on track, at risk or lost from its blocking letters, frozen at ``now``."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from airflow_retry_provider.policy.deliveries import Blocker, classify_delivery, is_today
from airflow_retry_provider.policy.fields import FieldError
from airflow_retry_provider.states import DeliveryStatus

LATEST = datetime(2026, 12, 4, 7, 45, tzinfo=timezone.utc)
BEFORE = LATEST - timedelta(minutes=30)
AFTER = LATEST + timedelta(minutes=30)


@pytest.mark.parametrize(
    ("blockers", "now", "status", "reason"),
    [
        # an open letter before its latest replay time: a replay now still delivers
        ([Blocker(1, "dlq", LATEST)], BEFORE, DeliveryStatus.AT_RISK, "letter(s) 1 wait for a replay"),
        # a parked letter is as open as one in the queue
        ([Blocker(1, "parked", LATEST)], BEFORE, DeliveryStatus.AT_RISK, "letter(s) 1 wait for a replay"),
        # the same letter one minute past its latest replay time: the delivery is lost
        (
            [Blocker(1, "dlq", LATEST)],
            LATEST + timedelta(minutes=1),
            DeliveryStatus.LOST,
            "letter 1 is not replayed and its latest replay time passed",
        ),
        # exactly at the latest replay time a replay still fits
        ([Blocker(1, "dlq", LATEST)], LATEST, DeliveryStatus.AT_RISK, "letter(s) 1 wait for a replay"),
        # replayed (clear confirmed) before its latest time, still running: on track
        (
            [Blocker(1, "replaying", LATEST, BEFORE)],
            AFTER,
            DeliveryStatus.ON_TRACK,
            "every blocking letter was replayed in time",
        ),
        # replayed in time and resolved: on track, long after the latest time too
        (
            [Blocker(1, "resolved", LATEST, LATEST)],
            AFTER,
            DeliveryStatus.ON_TRACK,
            "every blocking letter was replayed in time",
        ),
        # replayed after its latest time: the path no longer fits, whatever the replay does
        (
            [Blocker(1, "resolved", LATEST, AFTER)],
            AFTER,
            DeliveryStatus.LOST,
            "letter 1 was replayed after its latest replay time",
        ),
        # dismissed: nobody replays it, the delivery will not come
        ([Blocker(1, "dismissed", LATEST)], BEFORE, DeliveryStatus.LOST, "letter 1 was dismissed: no replay"),
        # two letters: one replayed in time, one still open: at risk, never on track
        (
            [Blocker(1, "resolved", LATEST, BEFORE), Blocker(2, "dlq", LATEST + timedelta(hours=1))],
            AFTER,
            DeliveryStatus.AT_RISK,
            "letter(s) 2 wait for a replay",
        ),
        # two letters: the open one past its own latest time decides, however the other went
        (
            [Blocker(1, "replaying", AFTER, BEFORE), Blocker(2, "dlq", LATEST)],
            AFTER,
            DeliveryStatus.LOST,
            "letter 2 is not replayed and its latest replay time passed",
        ),
    ],
)
def test_a_delivery_is_classified_from_its_blocking_letters(blockers, now, status, reason):
    """The status and its reason follow from the letters' statuses, their latest replay times and when they started."""
    standing = classify_delivery(blockers, now)
    assert (standing.status, standing.reason) == (status, reason)


def test_the_latest_replay_time_is_the_earliest_of_the_open_letters():
    """An open letter's latest time is shown, not that of a letter already replayed; once none is open, the earliest."""
    early, late = LATEST, LATEST + timedelta(hours=1)
    mixed = classify_delivery([Blocker(1, "resolved", early, BEFORE), Blocker(2, "dlq", late)], BEFORE)
    assert mixed.latest_replay == late and not mixed.settled
    done = classify_delivery(
        [Blocker(1, "resolved", early, BEFORE), Blocker(2, "resolved", late, BEFORE)], AFTER
    )
    assert done.latest_replay == early and done.settled


@pytest.mark.parametrize(
    ("blockers", "now", "message"),
    [
        ([], BEFORE, "blockers: must name at least one letter"),  # nothing blocks: no delivery to classify
        ([Blocker(1, "dlq", LATEST)], datetime(2026, 12, 4), "now: must be a timezone-aware"),  # naive clock
    ],
)
def test_bad_input_names_the_field(blockers, now, message):
    """No letter, or a naive ``now``, is a FieldError naming the field."""
    with pytest.raises(FieldError, match=message):
        classify_delivery(blockers, now)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("status", "gone", "blockers\\[1\\].status: must be one of"),  # not a letter status
        (
            "latest_replay",
            datetime(2026, 12, 4),
            "blockers\\[1\\].latest_replay: must be a timezone-aware",
        ),  # naive
    ],
)
def test_a_bad_blocker_names_its_field_and_value(field, value, message):
    """A blocker with an unknown status or a naive time is refused naming the field."""
    fields = {"letter_id": 1, "status": "dlq", "latest_replay": LATEST, field: value}
    with pytest.raises(FieldError, match=message):
        Blocker(**fields)


SAO_PAULO = ZoneInfo("America/Sao_Paulo")


@pytest.mark.parametrize(
    ("deadline", "now", "today"),
    [
        # 09:00 in São Paulo on the 4th, asked at 01:00 UTC on the 4th (22:00 of the 3rd there): tomorrow there
        (
            datetime(2026, 12, 4, 9, 0, tzinfo=SAO_PAULO),
            datetime(2026, 12, 4, 1, 0, tzinfo=timezone.utc),
            False,
        ),
        # the same deadline asked at 04:00 UTC (01:00 there): today
        (
            datetime(2026, 12, 4, 9, 0, tzinfo=SAO_PAULO),
            datetime(2026, 12, 4, 4, 0, tzinfo=timezone.utc),
            True,
        ),
        # a UTC deadline earlier the same UTC day: still today (it may be lost, it is still today's)
        (
            datetime(2026, 12, 4, 0, 30, tzinfo=timezone.utc),
            datetime(2026, 12, 4, 23, 0, tzinfo=timezone.utc),
            True,
        ),
    ],
)
def test_today_is_the_deadlines_own_date(deadline, now, today):
    """A deadline is today's when its date in its own time zone is today's date there."""
    assert is_today(deadline, now) is today
