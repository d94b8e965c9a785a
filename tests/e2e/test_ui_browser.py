"""The dead-letter pages in a real Airflow, driven by headless Chromium (Debian's ``chromium`` via Playwright).

One stack serves the module (scheduler, dag-processor, api-server with the plugin, triggerer;
LocalExecutor) on fresh databases of the session's PostgreSQL. A real DAG run files a real
letter through the provider's callback; a few more are seeded with ``DeadLetterStore.file`` so
the filter has something to filter out. The browser signs in on Airflow's login page, opens
"Dead letters" from Airflow's nav, filters, opens the letter, previews and replays it, and sees
its status change. Screenshots land in ``tests/artifacts/``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

import pytest

from airflow_retry_provider.dlq.models import Letter
from airflow_retry_provider.dlq.store import DeadLetterStore, LetterFilter
from devstack.airflow import ADMIN_USER, AirflowStack
from devstack.postgres import PostgresServer
from tests.conftest import running_airflow
from tests.e2e.conftest import ARTIFACTS, open_from_browse_menu, signed_in_page
from tests.factories import new_letter

pytestmark = pytest.mark.e2e

POISON_DAG = "policy_poison_between_valid"

SEED = new_letter(
    dag_id="nightly_positions",
    run_id="scheduled__2026-11-28T00:00:00+00:00",
    task_id="load_positions",
    try_number=3,
    attempts_used=3,
    max_attempts=3,
    work_unit_key="ws-7/2026-11-28",
    data_interval_start=datetime(2026, 11, 28, tzinfo=timezone.utc),
    data_interval_end=datetime(2026, 11, 29, tzinfo=timezone.utc),
    workspace_id="ws-7",
    failure_class="retryable",
    category="timeout",
    rule="timeout-error",
    exception_type="TimeoutError",
    message="read timed out after 30s <script>alert(1)</script>",
    reason="retries exhausted",
    fingerprint="fp-timeout",
)


class Env:
    """The running stack, its provider store, and the letter the real DAG run filed."""

    def __init__(self, stack: AirflowStack, store: DeadLetterStore, letter: Letter) -> None:
        self.stack = stack
        self.store = store
        self.letter = letter


@pytest.fixture(scope="module")
def env(pg_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    """A real Airflow with the plugin; one poison job failed into the DLQ, three more letters seeded."""
    with running_airflow(
        pg_server,
        tmp_path_factory.mktemp("ui-airflow-home"),
        "ui",
        extra_env={"AIRFLOW__RETRY_PROVIDER__REPLAY_RATE_PER_MINUTE": "60"},
    ) as airflow:
        stack, store = airflow.stack, DeadLetterStore.from_dsn(airflow.provider_dsn)
        for i in range(3):
            store.file(replace(SEED, run_id=f"{SEED.run_id}-{i}"), replay_cap=3)
        stack.wait_for_dag(POISON_DAG)
        stack.api("PATCH", f"/api/v2/dags/{POISON_DAG}", json={"is_paused": False})
        run_id = stack.api("POST", f"/api/v2/dags/{POISON_DAG}/dagRuns", json={"logical_date": None})[
            "dag_run_id"
        ]
        assert stack.wait_for_run(POISON_DAG, run_id, timeout=240)["state"] == "failed"
        letter = _wait(lambda: _one(store.list(LetterFilter(dag_id=POISON_DAG))), "the poison job's letter")
        yield Env(stack, store, letter)


def _one(letters: list[Letter]) -> Letter | None:
    return letters[0] if letters else None


def _wait(check: Any, what: str, timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(1)
    raise AssertionError(f"timed out waiting for {what}")


def test_an_operator_filters_previews_and_replays_a_letter_from_airflows_ui(env: Env, browser: Any):
    """Sign in, Browse > Dead letters, filter, open the letter, preview, replay, and see its status change."""
    from playwright.sync_api import expect

    page = signed_in_page(browser, env.stack.base_url)
    open_from_browse_menu(page, "Dead letters", r"/plugin/dead-letters")
    frame = page.frame_locator('iframe[title="Dead letters"]')
    expect(frame.locator("#letters tbody tr[data-letter]")).to_have_count(4)
    expect(frame.get_by_text("read timed out after 30s <script>alert(1)</script>").first).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "dead-letters-list.png"), full_page=True)

    frame.locator("select[name=dag_id]").select_option(POISON_DAG)
    frame.locator("#apply-filters").click()
    expect(frame.locator("#letters tbody tr[data-letter]")).to_have_count(1)
    expect(frame.locator("#count")).to_contain_text("1 letter")

    frame.locator(f'tr[data-letter="{env.letter.id}"] a.letter-link').click()
    expect(frame.locator("#letter-status")).to_have_text("dlq")
    expect(frame.locator("#error-message")).to_contain_text("positions_v2")

    frame.locator("#replay").click()
    expect(frame.locator("#preview-summary")).to_contain_text("1 letter will be replayed")
    expect(frame.locator("#preview-summary")).to_contain_text("1 task instance cleared")
    expect(frame.locator(f'#preview-items tr[data-letter="{env.letter.id}"]')).to_contain_text("invalid_job")
    expect(frame.locator(f'#preview-items tr[data-letter="{env.letter.id}"] td.runs-on')).to_contain_text(
        "the run's own"
    )
    assert env.store.get(env.letter.id).status == "dlq"  # type: ignore[union-attr]  # the preview changed nothing

    frame.locator("#reason").fill("checking the UI replay")
    frame.locator("#fix-version").fill("ui-e2e-1")
    frame.locator("#confirm-replay").click()
    expect(frame.locator("#job-status")).to_contain_text("finished", timeout=60_000)
    expect(frame.locator("#job-status")).to_contain_text("1 cleared")
    expect(frame.locator("#job-canary")).to_contain_text("No canary")  # one letter needs none
    expect(frame.locator("#job-verdict")).to_contain_text("resolved by the fix")

    replayed = _wait(
        lambda: (lambda lt: lt if lt and lt.replay_count == 1 and lt.status == "dlq" else None)(
            env.store.get(env.letter.id)
        ),
        "the replay to run and fail again (no fix deployed)",
        timeout=150,
    )
    assert replayed.try_number == 2
    (replay,) = env.store.replays(env.letter.id)
    assert (replay.actor, replay.reason, replay.fix_version, replay.outcome) == (
        ADMIN_USER,
        "checking the UI replay",
        "ui-e2e-1",
        "failed",
    )

    frame.locator("a.job-letter").first.click()
    expect(frame.locator("#replays")).to_contain_text("checking the UI replay")
    expect(frame.locator("#replays")).to_contain_text("failed")
    expect(frame.locator("body")).to_contain_text("replays so far: 1")
    expect(frame.locator("#tries tbody tr")).to_have_count(2)  # both tries, from Airflow's REST API
    page.screenshot(path=str(ARTIFACTS / "dead-letters-after-replay.png"), full_page=True)

    frame.locator("#ti-link").click()  # a link into Airflow's own page moves Airflow's router, not the frame
    page.wait_for_url(re.compile(r"/tasks/invalid_job"))
    page.get_by_role("link", name="Dead letters").click()
    tab = page.frame_locator('iframe[title="Dead letters"]')
    expect(tab.locator("#ti-letter")).to_have_text(str(env.letter.id))
    expect(tab.locator("#tries tbody tr")).to_have_count(2)
    page.screenshot(path=str(ARTIFACTS / "dead-letters-task-instance-tab.png"), full_page=True)

    audit = env.stack.api("GET", "/api/v2/eventLogs", params={"event": "retry_provider_replay"})
    assert [entry["owner"] for entry in audit["event_logs"]] == [ADMIN_USER]
    page.close()


def test_the_preview_form_picks_the_canary_a_job_starts_with(env: Env, browser: Any):
    """Two letters: the newest is the canary by default; picking the other makes it the job's canary, cleared alone."""
    from playwright.sync_api import expect

    real = env.store.get(env.letter.id)
    assert real is not None and real.status == "dlq"
    # an older letter of the same run, whose task instance succeeded: Airflow clears nothing for it
    older = env.store.file(
        replace(SEED, dag_id=POISON_DAG, run_id=real.run_id, task_id="valid_before", try_number=1),
        replay_cap=3,
    ).letter_id
    with env.store.db.transaction() as cur:
        cur.execute(
            "UPDATE retry_dead_letters SET created_at = created_at - interval '1 day' WHERE id = %s", (older,)
        )
    browser.clear_cookies()  # signed out: the module's first test signed this browser in
    page = signed_in_page(browser, env.stack.base_url)
    page.goto(f"{env.stack.base_url}/retry-provider/preview?ids={real.id}&ids={older}")
    expect(page.locator("#canary")).to_have_value(str(real.id))  # the newest
    page.locator("#canary").select_option(str(older))
    page.locator("#reason").fill("checking the canary pick")
    page.locator("#fix-version").fill("ui-e2e-2")
    page.locator("#confirm-replay").click()
    page.wait_for_url(re.compile(r"/jobs/\d+"))
    expect(page.locator("#job-canary")).to_contain_text(f"Canary: letter {older}")
    expect(page.locator("#job-stop")).to_contain_text(f"canary letter {older} failed", timeout=60_000)
    after = env.store.get(real.id)  # the letter not picked stays in dlq, untouched
    assert after is not None and (after.status, after.replay_count) == ("dlq", real.replay_count)
    assert all(replay.reason != "checking the canary pick" for replay in env.store.replays(real.id))
    page.close()
