"""The Retries tab in a real Airflow, in headless Chromium, and ``airflow-retry tries`` against the same stack.

The e2e modules' shared stack (scheduler, dag-processor, api-server with the plugin, triggerer;
LocalExecutor) runs ``policy_transient_recovers``: its task fails twice on a connection reset, is retried by the
classified policy with its own delays, and succeeds on try 3. The browser signs in, opens the task
instance in Airflow's UI, clicks its "Retries" tab and reads each try with its delay and reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from devstack.airflow import AirflowStack
from tests.e2e.conftest import ARTIFACTS, E2E, signed_in_page

pytestmark = pytest.mark.e2e

DAG_ID, TASK_ID = "policy_transient_recovers", "flaky"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def retried(e2e: E2E) -> tuple[AirflowStack, str]:
    """The shared Airflow with the plugin, and the id of a finished run whose task was retried twice."""
    stack = e2e.stack
    stack.wait_for_dag(DAG_ID)
    stack.api("PATCH", f"/api/v2/dags/{DAG_ID}", json={"is_paused": False})
    run_id = stack.api("POST", f"/api/v2/dags/{DAG_ID}/dagRuns", json={"logical_date": None})["dag_run_id"]
    assert stack.wait_for_run(DAG_ID, run_id, timeout=300)["state"] == "success"
    return stack, run_id


def test_the_retries_tab_shows_each_try_with_reason_and_delay(
    retried: tuple[AirflowStack, str], browser: Any
):
    """Task instance > Retries: three tries, the two retried ones with the policy's delay, reason, class and rule."""
    from playwright.sync_api import expect

    stack, run_id = retried
    page = signed_in_page(browser, stack.base_url)
    page.goto(f"{stack.base_url}/dags/{DAG_ID}/runs/{quote(run_id, safe='')}/tasks/{TASK_ID}")
    page.get_by_role("link", name="Retries").click()
    page.wait_for_url(lambda url: url.endswith("/plugin/retries-ti"))
    frame = page.frame_locator('iframe[title="Retries"]')
    rows = frame.locator("#retries tbody tr[data-try]")
    expect(rows).to_have_count(3)
    for try_number in (1, 2):
        row = frame.locator(f'#retries tr[data-try="{try_number}"]')
        expect(row.locator(".reason")).to_contain_text(f"[attempt {try_number + 1}/3] [after ")
        expect(row.locator(".reason")).to_contain_text("ConnectionResetError")
        expect(row.locator(".class")).to_contain_text("retryable / connection-failed")
        expect(row.locator(".delay")).not_to_have_text("–")
        expect(row).to_contain_text("type-connection-failed")
        expect(row.locator(".spent")).to_have_text("spent")  # the code's own failure spends an attempt
    expect(frame.locator('#retries tr[data-try="3"]')).to_contain_text("success")
    page.screenshot(path=str(ARTIFACTS / "retries-tab.png"), full_page=True)
    page.close()


def test_the_cli_prints_the_same_tries(retried: tuple[AirflowStack, str]):
    """``airflow-retry tries --json`` reads the plugin's API with the stack's API connection."""
    stack, run_id = retried
    env = {**stack.env(), "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    command = [
        str(Path(sys.executable).parent / "airflow-retry"),
        "tries",
        "--dag",
        DAG_ID,
        "--run",
        run_id,
    ]
    shown = subprocess.run(
        [*command, "--task", TASK_ID, "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert shown.returncode == 0, shown.stderr
    history = json.loads(shown.stdout)
    assert [t["try_number"] for t in history["tries"]] == [1, 2, 3]
    assert history["tries"][0]["decision"]["category"] == "connection-failed"
    assert history["tries"][0]["delay_seconds"] > 0
    text = subprocess.run([*command, "--task", TASK_ID], env=env, capture_output=True, text=True, timeout=120)
    assert text.returncode == 0 and "rule type-connection-failed" in text.stdout
    missing = subprocess.run(
        [*command, "--task", "nope"], env=env, capture_output=True, text=True, timeout=120
    )
    assert missing.returncode == 1 and "HTTP 404" in missing.stderr
