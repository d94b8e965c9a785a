"""Debian's headless Chromium through Playwright, signed in to a devstack Airflow (tests and screenshots)."""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from devstack.airflow import ADMIN_PASSWORD, ADMIN_USER

CHROMIUM = "/usr/bin/chromium"  # Debian's package, never a browser download
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def chromium(width: int = 1440, height: int = 1000) -> Iterator[Any]:
    """A persistent Chromium context with a fresh profile; closed and removed at the end."""
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="arp-chromium-")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": width, "height": height},
        )
        try:
            yield context
        finally:
            context.close()
            shutil.rmtree(profile, ignore_errors=True)


def signed_in_page(browser: Any, base_url: str) -> Any:
    """A new page signed in on Airflow's own login page as the admin."""
    page = browser.new_page()
    page.set_default_timeout(30_000)
    page.goto(base_url + "/")
    page.wait_for_url(re.compile(r"/auth/login"))
    page.locator("input[name=username]").fill(ADMIN_USER)
    page.locator("input[name=password]").fill(ADMIN_PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"^(?!.*/auth/login)"))
    return page
