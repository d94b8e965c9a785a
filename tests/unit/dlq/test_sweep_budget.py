"""The sweep's page budget and watermark, as pure values (issue 46)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from airflow_retry_provider.dlq.models import SweepState
from airflow_retry_provider.dlq.sweeper import watermark_after
from airflow_retry_provider.dlq.sync import PageBudget

T0 = datetime(2026, 12, 3, 10, 0, tzinfo=timezone.utc)
HOUR = timedelta(hours=1)


def test_a_budget_holds_back_pages_for_the_full_pass_until_released():
    """With 10 pages and 2 kept back, the first parts get 8; released, the pass gets the rest; then none."""
    budget = PageBudget(10)
    budget.keep(2)
    assert sum(budget.spend() for _ in range(20)) == 8
    budget.keep(0)
    assert budget.left() == 2 and sum(budget.spend() for _ in range(20)) == 2
    assert budget.left() == 0 and not budget.spend() and budget.used == 10


@pytest.mark.parametrize(
    ("kept", "cursor", "caught_up", "expected"),
    [
        # stopped mid-stream (budget, 429): where it stopped, even behind the kept one (an overlap reread)
        (SweepState(T0, 3, True, None), (T0 - HOUR, 7), False, (T0 - HOUR, 7, False)),
        # caught up past the kept watermark: the newest end_date read
        (SweepState(T0, 0, True, None), (T0 + HOUR, 2), True, (T0 + HOUR, 2, True)),
        # caught up inside the overlap (nothing new): never back from the kept one
        (SweepState(T0, 4, True, None), (T0 - HOUR, 1), True, (T0, 4, True)),
        # nothing ever ended: now minus the overlap, so the lookback is not read again
        (SweepState(None, 0, True, None), (T0 - 168 * HOUR, 0), True, (T0 + 2 * HOUR, 0, True)),
    ],
)
def test_the_watermark_a_read_leaves(kept, cursor, caught_up, expected):
    """A read that stopped leaves its place; one that caught up leaves the latest of its end, the kept mark and now minus the overlap."""
    settled = T0 + 2 * HOUR if kept.watermark is None else T0 - 2 * HOUR
    after = watermark_after(kept, cursor[0], cursor[1], caught_up, settled)
    assert (after.watermark, after.watermark_skip, after.caught_up) == expected
