""" "Medallion gaps" and "Connector health" in a real Airflow, opened from its nav in headless Chromium.

The shared stack of the e2e modules (scheduler, dag-processor, api-server with the plugin, triggerer);
two workspaces' reports are stored by the real ``report.py`` functions (the integration test's
``seed``). The browser signs in on Airflow's login page, opens both pages from Browse, switches
workspace, and saves screenshots to ``tests/artifacts/``.
"""

from __future__ import annotations

from typing import Any

import pytest

from devstack.airflow import AirflowStack
from tests.e2e.conftest import ARTIFACTS, E2E, open_from_browse_menu, signed_in_page
from tests.integration.plugin.routers.test_reconciliation import seed

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(e2e: E2E) -> AirflowStack:
    """The shared Airflow with the plugin, its provider database holding ws-a's and ws-b's reports."""
    seed(e2e.provider_dsn)  # no other module stores reconciliation reports
    return e2e.stack


def test_an_operator_opens_medallion_gaps_and_connector_health_from_airflows_nav(
    stack: AirflowStack,
    browser: Any,
):
    """Sign in, Browse > Medallion gaps (findings, chart, another workspace), Browse > Connector health."""
    from playwright.sync_api import expect

    page = signed_in_page(browser, stack.base_url)
    open_from_browse_menu(page, "Medallion gaps", r"/plugin/medallion-gaps")
    gaps = page.frame_locator('iframe[title="Medallion gaps"]')
    expect(gaps.locator("#findings tbody tr[data-layer]")).to_have_count(3)
    expect(gaps.locator("#findings")).to_contain_text("crm/<script>alert(1)</script>")
    expect(gaps.locator("#findings-chart svg polyline")).to_have_count(3)
    expect(gaps.locator("#history tbody tr")).to_have_count(3)
    page.screenshot(path=str(ARTIFACTS / "medallion-gaps.png"), full_page=True)

    gaps.locator("#workspace").select_option("ws-b")
    expect(gaps.locator("#findings tbody tr[data-layer]")).to_have_count(1)
    expect(gaps.locator("#findings")).to_contain_text("erp/secret_b_table")
    expect(gaps.locator("#findings")).not_to_contain_text("crm/")

    open_from_browse_menu(page, "Connector health", r"/plugin/connector-health")
    health = page.frame_locator('iframe[title="Connector health"]')
    expect(health.locator("#connectors tbody tr[data-connector]")).to_have_count(3)
    expect(health.locator('tr[data-connector="api"] .status')).to_have_text("failing")
    expect(health.locator('tr[data-connector="db"] .status')).to_have_text("healthy")
    expect(health.locator('tr[data-connector="api"] svg')).to_have_count(2)
    page.screenshot(path=str(ARTIFACTS / "connector-health.png"), full_page=True)
    page.close()
