"""Replays that finish the delivery, in a real Airflow whose api-server runs two workers.

A three-task chain ``extract >> transform >> publish`` where ``transform`` is poison until a
Variable says the fix is deployed. The e2e modules' shared stack serves it; three runs fail in
the module fixture, before any fix: one is replayed with its downstream through the plugin's JSON
API, one with ``"downstream": false``, one through a proxy that drops the clear's response.
"""

from __future__ import annotations

import http.server
import threading
import time
from typing import Any

import httpx
import psycopg
import pytest

from airflow_retry_provider.dlq.models import Letter
from airflow_retry_provider.dlq.replay import ReplayEngine, ReplayRequest
from airflow_retry_provider.dlq.store import DeadLetterStore, LetterFilter
from airflow_retry_provider.hooks.airflow_api import AirflowApi, ApiCredentials
from devstack.airflow import ADMIN_PASSWORD, ADMIN_USER, AirflowStack
from tests.e2e.conftest import E2E

pytestmark = pytest.mark.e2e

CHAIN_DAG = "dlq_replay_chain"
FIX_VARIABLE = "chain_fix_applied"
PREFIX = "/retry-provider"


class Chain:
    """The stack, its provider store, and the three failed runs of the chain."""

    def __init__(self, stack: AirflowStack, provider_dsn: str) -> None:
        self.stack = stack
        self.provider_dsn = provider_dsn
        self.store = DeadLetterStore.from_dsn(provider_dsn)
        self.runs: dict[str, str] = {}

    def ti(self, run_id: str, task_id: str) -> dict[str, Any]:
        return dict(
            self.stack.api("GET", f"/api/v2/dags/{CHAIN_DAG}/dagRuns/{run_id}/taskInstances/{task_id}")
        )

    def letter(self, run_id: str) -> Letter:
        (letter,) = [lt for lt in self.store.list(LetterFilter(dag_id=CHAIN_DAG)) if lt.run_id == run_id]
        return letter

    def wait_letter(self, letter_id: int, status: str, timeout: float = 180) -> Letter:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            letter = self.store.get(letter_id)
            if letter is not None and letter.status == status:
                return letter
            time.sleep(1)
        raise AssertionError(f"letter {letter_id} is not {status}: {self.store.get(letter_id)}")

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """The plugin's API as the signed-in admin, on a fresh connection (either worker may answer)."""
        return httpx.request(
            method,
            f"{self.stack.base_url}{PREFIX}{path}",
            headers={"Authorization": f"Bearer {self.stack.token()}"},
            timeout=60,
            **kwargs,
        )

    def wait_job(self, job_id: int, timeout: float = 180) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            job = self.request("GET", f"/api/jobs/{job_id}").json()
            if job["finished"]:
                return dict(job)
            time.sleep(1)
        raise AssertionError(f"job {job_id} did not finish: {job}")

    def set_fix(self, value: str) -> None:
        try:
            self.stack.api(
                "PATCH", f"/api/v2/variables/{FIX_VARIABLE}", json={"key": FIX_VARIABLE, "value": value}
            )
        except RuntimeError:
            self.stack.api("POST", "/api/v2/variables", json={"key": FIX_VARIABLE, "value": value})


@pytest.fixture(scope="module")
def chain(e2e: E2E) -> Chain:
    """The shared Airflow (two api-server workers), and three runs of the chain failed at ``transform``."""
    found = Chain(e2e.stack, e2e.provider_dsn)
    found.set_fix("no")
    stack = e2e.stack
    stack.wait_for_dag(CHAIN_DAG)
    stack.api("PATCH", f"/api/v2/dags/{CHAIN_DAG}", json={"is_paused": False})
    for name in ("downstream", "task_only", "lost_response"):
        run = stack.api("POST", f"/api/v2/dags/{CHAIN_DAG}/dagRuns", json={"logical_date": None})
        found.runs[name] = str(run["dag_run_id"])
    for run_id in found.runs.values():
        assert stack.wait_for_run(CHAIN_DAG, run_id, timeout=300)["state"] == "failed"
        assert found.ti(run_id, "publish")["state"] == "upstream_failed"
    deadline = time.monotonic() + 60
    while len(found.store.list(LetterFilter(dag_id=CHAIN_DAG))) < 3 and time.monotonic() < deadline:
        time.sleep(1)
    return found


def test_a_replay_through_the_json_api_finishes_the_run(chain: Chain):
    """The preview lists transform and publish; the replay reruns both once, the run ends success, the letter resolved."""
    run_id = chain.runs["downstream"]
    letter = chain.letter(run_id)
    assert (letter.task_id, letter.status) == ("transform", "dlq")
    preview = chain.request("POST", "/api/preview", json={"ids": [letter.id]}).json()
    touched = sorted((t["task_id"], t["state"]) for t in preview["items"][0]["instances"])
    assert touched == [("publish", "upstream_failed"), ("transform", "failed")]
    task_only = chain.request("POST", "/api/preview", json={"ids": [letter.id], "downstream": False}).json()
    assert [t["task_id"] for t in task_only["items"][0]["instances"]] == ["transform"]

    chain.set_fix("yes")
    answer = chain.request(
        "POST",
        "/api/replays",
        json={"ids": [letter.id], "reason": "positions_chain created", "fix_version": "v2"},
    )
    assert answer.status_code == 202, answer.text
    job = chain.wait_job(answer.json()["id"])
    assert (job["status"], job["counts"], job["downstream"], job["actor"]) == (
        "done",
        {"cleared": 1},
        True,
        ADMIN_USER,
    )
    run = chain.stack.wait_for_run(CHAIN_DAG, run_id, timeout=240)
    assert run["state"] == "success"
    assert (chain.ti(run_id, "publish")["state"], chain.ti(run_id, "publish")["try_number"]) == ("success", 1)
    assert chain.ti(run_id, "extract")["try_number"] == 1  # only_failed: a task that succeeded never reruns
    resolved = chain.wait_letter(letter.id, "resolved")
    assert resolved.replay_count == 0
    events = [e.event for e in chain.store.events(letter.id)]
    assert events[0] == "filed" and events[-3:] == ["claimed", "cleared", "resolved"], events
    detail = chain.request("GET", f"/api/letters/{letter.id}").json()
    assert [e["event"] for e in detail["history"]] == events


def test_a_task_only_replay_leaves_publish_untouched(chain: Chain):
    """With ``"downstream": false`` transform reruns and succeeds; publish stays upstream_failed, never run."""
    run_id = chain.runs["task_only"]
    letter = chain.letter(run_id)
    chain.set_fix("yes")
    body = {"ids": [letter.id], "reason": "only transform", "fix_version": "v2", "downstream": False}
    job = chain.wait_job(chain.request("POST", "/api/replays", json=body).json()["id"])
    assert (job["counts"], job["downstream"]) == ({"cleared": 1}, False)
    chain.wait_letter(letter.id, "resolved")
    assert chain.ti(run_id, "transform")["state"] == "success"
    publish = chain.ti(run_id, "publish")
    assert (publish["state"], publish["try_number"]) == ("upstream_failed", 0)


def test_a_job_started_through_one_worker_is_read_through_the_other(chain: Chain):
    """Fresh connections reach both api-server workers; each answers the same job from the table."""
    with psycopg.connect(chain.provider_dsn) as conn:
        (job_id,) = conn.execute("SELECT max(id) FROM retry_replay_jobs").fetchone()
    answers: dict[str, dict[str, Any]] = {}
    deadline = time.monotonic() + 90
    while len(answers) < 2 and time.monotonic() < deadline:
        response = chain.request("GET", f"/api/jobs/{job_id}")
        assert response.status_code == 200, response.text
        answers[response.headers["x-retry-provider-worker"]] = response.json()
    assert len(answers) == 2, f"only worker(s) {list(answers)} answered"
    first, second = answers.values()
    assert first["counts"] == second["counts"] and first["status"] == second["status"] == "done"


def test_bad_input_is_a_clear_error_and_changes_nothing(chain: Chain):
    """Unknown job id, cancelling a finished job, replaying a letter that is not in dlq: named errors, no new job."""
    with psycopg.connect(chain.provider_dsn) as conn:
        (jobs_before, last_job) = conn.execute("SELECT count(*), max(id) FROM retry_replay_jobs").fetchone()
    missing = chain.request("GET", "/api/jobs/987654")
    assert missing.status_code == 404 and "987654" in missing.json()["detail"]
    finished = chain.request("POST", f"/api/jobs/{last_job}/cancel", json={})  # JSON, as the UI sends it
    assert finished.status_code == 409 and "done" in finished.json()["detail"]
    resolved = chain.letter(chain.runs["downstream"])
    again = chain.request(
        "POST", "/api/replays", json={"ids": [resolved.id], "reason": "again", "fix_version": "v3"}
    )
    assert again.status_code == 409 and f"letter {resolved.id}: status is resolved" in again.json()["detail"]
    bad = chain.request(
        "POST",
        "/api/replays",
        json={"ids": [resolved.id], "reason": "r", "fix_version": "v", "downstream": "maybe"},
    )
    assert bad.status_code == 422
    with psycopg.connect(chain.provider_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM retry_replay_jobs").fetchone() == (jobs_before,)
    assert chain.store.get(resolved.id).status == "resolved"  # type: ignore[union-attr]


class DroppingProxy:
    """An HTTP proxy to Airflow that forwards a real clear, then drops Airflow's response to it."""

    def __init__(self, target: str) -> None:
        proxy = self
        self.dropped = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = {
                    k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")
                }
                answer = httpx.request(
                    self.command, target + self.path, headers=headers, content=body, timeout=60
                )
                if "clearTaskInstances" in self.path and b'"dry_run":false' in body.replace(b" ", b""):
                    proxy.dropped += 1
                    self.close_connection = True  # Airflow committed the clear; its answer never arrives
                    return
                self.send_response(answer.status_code)
                for name in ("content-type",):
                    if name in answer.headers:
                        self.send_header(name, answer.headers[name])
                self.send_header("content-length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            do_GET = do_POST = do_PATCH = _forward

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_lost_clear_response_still_ends_resolved(chain: Chain):
    """The clear reaches Airflow but its response is dropped: outcome unknown, letter replaying, then resolved when the task succeeds."""
    run_id = chain.runs["lost_response"]
    letter = chain.letter(run_id)
    chain.set_fix("yes")
    proxy = DroppingProxy(chain.stack.base_url)
    try:
        api = AirflowApi(ApiCredentials(proxy.url, ADMIN_USER, ADMIN_PASSWORD), timeout=30)
        engine = ReplayEngine(chain.store, api, replay_cap=3, rate_per_minute=60)
        request = ReplayRequest("ana", "answer lost", "v2", source="cli", actor_verified=False, os_user="ana")
        replay_id = engine.claim(letter, request)
        assert replay_id is not None
        result = engine.clear(api, letter, replay_id, request)
        api.close()
    finally:
        proxy.close()
    assert proxy.dropped == 1 and result.outcome == "unknown"  # the letter stayed replaying (see its history)
    resolved = chain.wait_letter(letter.id, "resolved")
    assert resolved.replay_count == 0
    (replay,) = chain.store.replays(letter.id)
    assert replay.outcome == "succeeded"
    assert chain.ti(run_id, "transform")["try_number"] == 2  # cleared exactly once
    assert chain.stack.wait_for_run(CHAIN_DAG, run_id, timeout=240)["state"] == "success"
    events = [e.event for e in chain.store.events(letter.id)]
    assert events[-3:] == ["claimed", "unknown", "resolved"], events
