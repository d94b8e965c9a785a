"""The Deliveries page in a real Airflow, in headless Chromium: today's delivery at risk, and its letter.

The e2e modules' shared stack (api-server with the plugin, Airflow's own login). A letter and its
stored impact (a delivery due at the end of today, UTC) are written by the real store in the
stack's provider database; the browser signs in, opens Browse > Deliveries, reads the delivery's
status and latest replay time, and follows the link to the letter that blocks it.
"""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone
from typing import Any

import pytest

from airflow_retry_provider.dlq.store import DeadLetterStore
from airflow_retry_provider.policy.impact import Delivery, Impact
from airflow_retry_provider.states import DeliveryStatus
from tests.e2e.conftest import ARTIFACTS, E2E, open_from_browse_menu, signed_in_page
from tests.factories import new_letter

pytestmark = pytest.mark.e2e

DAG = "browser_deliveries_etl"


def test_an_operator_sees_todays_delivery_at_risk_and_opens_the_letter_that_blocks_it(e2e: E2E, browser: Any):
    """Browse > Deliveries: the delivery is at risk with its latest replay time; its letter link opens the letter."""
    from playwright.sync_api import expect

    store = DeadLetterStore.from_dsn(e2e.provider_dsn)
    letter_id = store.file(
        new_letter(dag_id=DAG, run_id="browser_r1", task_id="extract"), replay_cap=3
    ).letter_id
    # the stack's impact thread computes the filed letter's impact (its DAG is not in Airflow: none);
    # wait for it, so the impact written below is not replaced by that computation
    deadline_wait = time.monotonic() + 90
    while store.impact(letter_id) is None and time.monotonic() < deadline_wait:
        time.sleep(0.5)
    assert store.impact(letter_id) is not None, (
        "the impact thread did not compute the letter's impact in 90 s"
    )
    now = datetime.now(timezone.utc)
    deadline = datetime.combine(now.date(), datetime.max.time(), timezone.utc).replace(microsecond=0)
    path = (deadline - now) / 2
    delivery = Delivery(DAG, "publish", deadline, path, deadline - path, DeliveryStatus.AT_RISK)
    store.set_impact(letter_id, Impact(deliveries=(delivery,), delivery_count=1))
    page = signed_in_page(browser, e2e.stack.base_url)
    page.goto(e2e.stack.base_url)
    open_from_browse_menu(page, "Deliveries", "/plugin/deliveries")
    frame = page.frame_locator('iframe[title="Deliveries"]')
    row = frame.locator(f'tr[data-delivery="{DAG}.publish"]')
    expect(row).to_have_attribute("data-status", DeliveryStatus.AT_RISK, timeout=30_000)
    expect(row.locator(".latest time")).to_have_attribute("datetime", delivery.latest_replay.isoformat())
    page.screenshot(path=str(ARTIFACTS / "deliveries-at-risk.png"), full_page=True)
    row.locator(f'a[data-letter="{letter_id}"]').click()
    expect(frame.locator("h1")).to_contain_text(re.compile(rf"Letter {letter_id}\b"), timeout=30_000)
    page.close()
