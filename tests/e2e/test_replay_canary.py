"""A replay job starts with one canary, in a real Airflow (issue 29 item 4).

``dlq_replay_many`` fails in 20 mapped instances while the Variable ``many_fix_applied`` is not
"yes". A job of the 20 letters before the fix: its canary is cleared, fails again, and the job stops
with the 19 others untouched in ``dlq``. After the fix, a second job's canary succeeds, the rest follow
at the rising pace, and the job's verdict is "20 resolved by the fix".
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import psycopg
import pytest

from airflow_retry_provider.dlq.store import DeadLetterStore, LetterFilter
from tests.e2e.conftest import E2E

pytestmark = pytest.mark.e2e

MANY_DAG = "dlq_replay_many"
FIX = "many_fix_applied"
PREFIX = "/retry-provider"


def _plugin(e2e: E2E, method: str, path: str, **kwargs: Any) -> httpx.Response:
    return httpx.request(
        method,
        f"{e2e.stack.base_url}{PREFIX}{path}",
        headers={"Authorization": f"Bearer {e2e.stack.token()}"},
        timeout=60,
        **kwargs,
    )


def _set_fix(e2e: E2E, value: str) -> None:
    try:
        e2e.stack.api("PATCH", f"/api/v2/variables/{FIX}", json={"key": FIX, "value": value})
    except RuntimeError:
        e2e.stack.api("POST", "/api/v2/variables", json={"key": FIX, "value": value})


def _wait_job(e2e: E2E, job_id: int, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    job: dict[str, Any] = {}
    while time.monotonic() < deadline:
        job = _plugin(e2e, "GET", f"/api/jobs/{job_id}").json()
        if job["finished"]:
            return job
        time.sleep(2)
    raise AssertionError(f"job {job_id} did not finish: {job}")


def test_a_failing_canary_spares_19_letters_and_a_passing_one_replays_all_20(e2e: E2E):
    """Before the fix the canary fails and 19 letters keep their replay count; after it all 20 end resolved, verdict 20."""
    stack, store = e2e.stack, DeadLetterStore.from_dsn(e2e.provider_dsn)
    _set_fix(e2e, "no")
    stack.wait_for_dag(MANY_DAG)
    stack.api("PATCH", f"/api/v2/dags/{MANY_DAG}", json={"is_paused": False})
    run_id = str(
        stack.api("POST", f"/api/v2/dags/{MANY_DAG}/dagRuns", json={"logical_date": None})["dag_run_id"]
    )
    assert stack.wait_for_run(MANY_DAG, run_id, timeout=300)["state"] == "failed"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        letters = [lt for lt in store.list(LetterFilter(dag_id=MANY_DAG), limit=100) if lt.run_id == run_id]
        if len(letters) == 20:
            break
        time.sleep(1)
    assert len(letters) == 20 and {lt.status for lt in letters} == {"dlq"}
    ids = [lt.id for lt in letters]

    body = {"ids": ids, "reason": "broken fix", "fix_version": "v2"}
    first = _plugin(e2e, "POST", "/api/replays", json=body).json()
    assert first["canary"]["letter_id"] == max(ids)  # the newest
    job = _wait_job(e2e, first["id"], timeout=300)
    canary = job["canary"]["letter_id"]
    assert job["status"] == "stopped" and job["stop_reason"].startswith(f"canary letter {canary} failed")
    assert job["counts"] == {"cleared": 1, "stopped": 19}
    for letter_id in set(ids) - {canary}:
        letter = store.get(letter_id)
        assert letter is not None and (letter.status, letter.replay_count) == ("dlq", 0)
    back = store.get(canary)
    assert back is not None and (back.status, back.replay_count) == ("dlq", 1)

    _set_fix(e2e, "yes")
    body = {"ids": ids, "reason": "the real fix", "fix_version": "v3"}
    second = _plugin(e2e, "POST", "/api/replays", json=body).json()
    job = _wait_job(e2e, second["id"], timeout=600)
    assert job["status"] == "done" and job["counts"] == {"cleared": 20}, job["counts"]
    with psycopg.connect(e2e.provider_dsn) as conn:
        sent = [
            row[0]
            for row in conn.execute(
                "SELECT clear_sent_at FROM retry_replays WHERE job_id = %s ORDER BY clear_sent_at",
                (second["id"],),
            )
        ]
    gaps = [(b - a).total_seconds() for a, b in zip(sent, sent[1:], strict=False)]
    assert gaps[0] >= 59  # after the canary's success, one at 1/min
    assert all(gap >= 11.5 for gap in gaps[1:6])  # then five at 5/min
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if {store.get(i).status for i in ids} == {"resolved"}:  # type: ignore[union-attr]
            break
        time.sleep(2)
    assert {store.get(i).status for i in ids} == {"resolved"}  # type: ignore[union-attr]
    verdict = _plugin(e2e, "GET", f"/api/jobs/{second['id']}").json()["verdict"]
    assert verdict["summary"] == "20 resolved by the fix"
