"""The Dependencies page in a real Airflow, in headless Chromium: force a breaker open, see it, hand it back.

The e2e modules' shared stack (api-server with the plugin, Airflow's own login). A breaker row
is written by the real ``BreakerStore`` in the stack's provider database; the browser signs in,
opens Browse > Dependencies, forces it open with a reason, reads the state and the history (the
actor is the signed-in user), then hands it back to automatic.
"""

from __future__ import annotations

from typing import Any

import pytest

from airflow_retry_provider.breaker.store import BreakerStore
from airflow_retry_provider.policy.breaker import CLOSED, BreakerSettings
from tests.e2e.conftest import ARTIFACTS, E2E, open_from_browse_menu, signed_in_page

pytestmark = pytest.mark.e2e

DEPENDENCY = "browser_positions_db"


def test_an_operator_forces_a_breaker_open_and_back_from_the_dependencies_page(e2e: E2E, browser: Any):
    """Force open: the page shows it open (forced) with admin and the reason in its history; Automatic: closed again."""
    from playwright.sync_api import expect

    store = BreakerStore.from_dsn(e2e.provider_dsn)
    store.admit(DEPENDENCY, "etl/r/load/-1", BreakerSettings())  # its row: closed, one healthy call
    page = signed_in_page(browser, e2e.stack.base_url)
    page.goto(e2e.stack.base_url)
    open_from_browse_menu(page, "Dependencies", "/plugin/dependencies")
    frame = page.frame_locator('iframe[title="Dependencies"]')
    section = frame.locator(f"#dep-{DEPENDENCY}")
    expect(section.locator(".state")).to_have_text("closed")
    section.locator("input.reason").fill("failover of the positions database")
    section.get_by_role("button", name="Force open").click()
    expect(section.locator(".state")).to_have_text("open", timeout=30_000)
    expect(section.locator(".forced")).to_have_text("forced open")
    expect(section.locator(".history tbody tr").first).to_contain_text("admin")
    expect(section.locator(".history tbody tr").first).to_contain_text("failover of the positions database")
    assert store.get(DEPENDENCY).forced == "open"
    page.screenshot(path=str(ARTIFACTS / "dependencies-forced-open.png"), full_page=True)
    section.locator("input.reason").fill("failover done")
    section.get_by_role("button", name="Automatic").click()
    expect(section.locator(".state")).to_have_text("closed", timeout=30_000)
    breaker = store.get(DEPENDENCY)
    assert (breaker.status, breaker.forced) == (CLOSED, None)
    page.close()
