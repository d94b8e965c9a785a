"""Who may replay what, in a real multi-team Airflow: the plugin checks the signed-in user, and so does Airflow.

Airflow runs with ``[core] multi_team``; two DAG bundles belong to ``team_a`` and ``team_b``, one DAG
each. ``ops_a`` may edit team_a's DAGs and nothing of team_b. Both DAGs stay paused: each run's task
instance is set to ``failed`` through the API, so the letters point at real failed task instances and
nothing runs behind the test's back. The clear itself is sent by the provider's service user (the
``retry_provider_airflow_api`` connection, see docs/RUNBOOK.md "Security model"); the plugin decides
who may ask for it, from the signed-in user's own rights, and Airflow's Audit Log names that user.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

from airflow_retry_provider.dlq.store import DeadLetterStore
from devstack.airflow import AirflowStack, airflow_executable
from devstack.postgres import PostgresServer
from tests.conftest import running_airflow
from tests.e2e.conftest import sample_until
from tests.factories import new_letter

pytestmark = pytest.mark.e2e

TEAMS = {"team_a": "mt_dag_a", "team_b": "mt_dag_b"}
OPERATOR = "ops_a"  # may edit team_a's DAGs only

DAG_FILE = """
import pendulum
from airflow.sdk import DAG, task

with DAG(dag_id="{dag_id}", schedule=None, start_date=pendulum.datetime(2026, 1, 1), catchup=False):

    @task(retries=0)
    def load() -> None:
        raise RuntimeError('relation "positions" does not exist')

    load()
"""


class Teams:
    def __init__(self, stack: AirflowStack, provider_dsn: str, metadata_dsn: str) -> None:
        self.stack = stack
        self.store = DeadLetterStore.from_dsn(provider_dsn)
        self.metadata_dsn = metadata_dsn
        self.letters: dict[str, int] = {}  # dag_id -> letter id of its failed task instance
        self.runs: dict[str, str] = {}

    def token(self, user: str) -> str:
        answer = httpx.post(
            f"{self.stack.base_url}/auth/token",
            json={"username": user, "password": self.stack.password(user)},
            timeout=30,
        )
        answer.raise_for_status()
        return str(answer.json()["access_token"])

    def call(self, user: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.request(
            method,
            f"{self.stack.base_url}{path}",
            headers={"Authorization": f"Bearer {self.token(user)}"},
            timeout=60,
            **kwargs,
        )


@pytest.fixture(scope="module")
def teams(pg_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Teams]:
    """A real multi-team Airflow: a bundle per team, a failed task instance and its letter in each DAG."""
    home = tmp_path_factory.mktemp("teams-home")
    bundles = []
    for team, dag_id in TEAMS.items():
        folder = home / f"{team}_dags"
        folder.mkdir()
        (folder / f"{dag_id}.py").write_text(DAG_FILE.format(dag_id=dag_id))
        bundles.append(
            {
                "name": f"{team}_bundle",
                "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle",
                "kwargs": {"path": str(folder), "refresh_interval": 0},
                "team_name": team,
            }
        )

    def create_teams(stack: AirflowStack) -> None:  # before the dag-processor assigns the bundles to them
        for team in TEAMS:
            subprocess.run(
                [airflow_executable(), "teams", "create", team],
                env=stack.env(),
                check=True,
                capture_output=True,
                timeout=300,
            )

    extra_env = {
        "AIRFLOW__CORE__MULTI_TEAM": "True",
        "AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST": json.dumps(bundles),
    }
    with running_airflow(
        pg_server,
        home,
        "mt",
        extra_env=extra_env,
        stack_options={"users": {OPERATOR: "user:team_a"}},
        before_start=create_teams,
    ) as airflow:
        stack = airflow.stack
        found = Teams(stack, airflow.provider_dsn, airflow.metadata_dsn)
        for dag_id in TEAMS.values():
            stack.wait_for_dag(dag_id)  # paused, as new DAGs are: nothing runs by itself
            run = stack.api("POST", f"/api/v2/dags/{dag_id}/dagRuns", json={"logical_date": None})
            run_id = found.runs[dag_id] = str(run["dag_run_id"])
            path = f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/load"
            sample_until(lambda: _exists(stack, path))  # noqa: B023 - called at once, in this iteration
            stack.api("PATCH", path, json={"new_state": "failed"})
            found.letters[dag_id] = found.store.file(
                new_letter(dag_id=dag_id, run_id=run_id, task_id="load"), replay_cap=3
            ).letter_id
        yield found


def _exists(stack: AirflowStack, path: str) -> bool:
    try:
        stack.api("GET", path)
        return True
    except RuntimeError:
        return False


def _wait_job(teams: Teams, user: str, job_id: int, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = teams.call(user, "GET", f"/retry-provider/api/jobs/{job_id}").json()
        if job["finished"]:
            return dict(job)
        time.sleep(1)
    raise AssertionError(f"job {job_id} did not finish")


def test_an_operator_replays_a_letter_of_their_team_and_the_audit_log_names_them(teams: Teams):
    """ops_a replays team_a's letter: it is cleared, and Airflow's Audit Log names ops_a on that DAG."""
    dag_a = TEAMS["team_a"]
    letter_id = teams.letters[dag_a]
    body = {"ids": [letter_id], "reason": "table created", "fix_version": "v2", "downstream": False}
    answer = teams.call(OPERATOR, "POST", "/retry-provider/api/replays", json=body)
    assert answer.status_code in (200, 201, 202), answer.text
    job = _wait_job(teams, OPERATOR, answer.json()["id"])
    assert job["counts"] == {"cleared": 1} and job["actor"] == OPERATOR, job
    (replay,) = teams.store.replays(letter_id)
    assert (replay.actor, replay.actor_verified, replay.source) == (OPERATOR, True, "api")
    ti = teams.stack.api("GET", f"/api/v2/dags/{dag_a}/dagRuns/{teams.runs[dag_a]}/taskInstances/load")
    assert ti["state"] != "failed"  # cleared: Airflow will run it again once the DAG is unpaused
    with psycopg.connect(teams.metadata_dsn) as conn:
        rows = conn.execute(
            "SELECT owner, dag_id, extra FROM log WHERE event = 'retry_provider_replay' ORDER BY id"
        ).fetchall()
    assert [(owner, dag_id) for owner, dag_id, _ in rows] == [(OPERATOR, dag_a)], rows
    assert str(letter_id) in rows[0][2]


def test_a_letter_of_another_team_is_refused_by_the_plugin_and_by_airflow(teams: Teams):
    """ops_a cannot replay team_b's letter (404, as if it did not exist), and Airflow refuses ops_a's own
    clear of team_b's task instance (403): both check the same user, and nothing of team_b changes."""
    dag_b = TEAMS["team_b"]
    letter_id = teams.letters[dag_b]
    body = {"ids": [letter_id], "reason": "not mine", "fix_version": "v2"}
    refused = teams.call(OPERATOR, "POST", "/retry-provider/api/replays", json=body)
    assert refused.status_code == 404, refused.text
    assert teams.call(OPERATOR, "GET", f"/retry-provider/api/letters/{letter_id}").status_code == 404
    assert teams.stack.api("GET", f"/retry-provider/api/letters/{letter_id}")["letter"]["id"] == letter_id
    clear = {"dry_run": False, "task_ids": ["load"], "dag_run_id": teams.runs[dag_b], "only_failed": True}
    direct = teams.call(OPERATOR, "POST", f"/api/v2/dags/{dag_b}/clearTaskInstances", json=clear)
    assert direct.status_code == 403, direct.text
    own = {**clear, "dry_run": True, "dag_run_id": teams.runs[TEAMS["team_a"]]}
    assert (
        teams.call(
            OPERATOR, "POST", f"/api/v2/dags/{TEAMS['team_a']}/clearTaskInstances", json=own
        ).status_code
        == 200
    )
    ti = teams.stack.api("GET", f"/api/v2/dags/{dag_b}/dagRuns/{teams.runs[dag_b]}/taskInstances/load")
    assert ti["state"] == "failed"
    letter = teams.store.get(letter_id)
    assert letter is not None and letter.status == "dlq" and teams.store.replays(letter_id) == []
