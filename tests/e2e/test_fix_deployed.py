"""The provider notices a possible fix, in a real Airflow (issue 29 item 2).

A bundle folder of this module's own holds one DAG whose three tasks fail poison; its file is
rewritten between runs, so the dag-processor parses a new DAG version. The sweep's steps run here
as the sweeper DAG runs them: the letters get their version number, and once version 2 is
deployed each root-cause group is told once, by e-mail through Airflow's real SmtpNotifier to an
SMTP server the module starts, with a link to the group's replay preview. Nothing is replayed.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import psycopg
import pytest

from airflow_retry_provider.dlq.store import DeadLetterStore, LetterFilter
from airflow_retry_provider.dlq.sweeper import notice_fixes, number_versions
from airflow_retry_provider.hooks.airflow_api import AirflowApi, ApiCredentials
from devstack.airflow import ADMIN_PASSWORD, ADMIN_USER
from devstack.smtp import SmtpSink
from tests.conftest import running_airflow
from tests.e2e.conftest import sample_until

pytestmark = pytest.mark.e2e

DAG_ID = "versioned_poison"
TASKS = ("part_a", "part_b", "part_c")
NOTIFIERS = [
    {
        "name": "oncall-mail",
        "class": "airflow.providers.smtp.notifications.smtp.SmtpNotifier",
        "kwargs": {"to": "oncall@example.test", "smtp_conn_id": "smtp_alerts"},
    }
]
DAG_FILE = '''
"""Three poison tasks; BUILD changes between deployments, so each is a new DAG version."""
import pendulum
from airflow.sdk import DAG, task

from airflow_retry_provider import apply_profile

BUILD = "{build}"

with DAG(
    "{dag_id}",
    schedule=None,
    start_date=pendulum.datetime(2026, 11, 1, tz="UTC"),
    catchup=False,
    description=f"build {{BUILD}}",
    tags=["test"],
):
    for name in {tasks!r}:

        @task(task_id=name)
        def part() -> None:
            raise RuntimeError('relation "positions_versioned" not found')

        apply_profile(part(), "report")
'''


def _deploy(folder: Path, build: str) -> None:
    (folder / "versioned_poison.py").write_text(
        textwrap.dedent(DAG_FILE.format(build=build, dag_id=DAG_ID, tasks=TASKS))
    )


class Stack:
    def __init__(self, running, folder: Path, smtp: SmtpSink) -> None:
        self.running = running
        self.stack = running.stack
        self.folder = folder
        self.smtp = smtp
        self.store = DeadLetterStore.from_dsn(running.provider_dsn)

    def api(self) -> AirflowApi:
        return AirflowApi(ApiCredentials(self.stack.base_url, ADMIN_USER, ADMIN_PASSWORD))

    def versions(self) -> list[int]:
        with self.api() as api:
            return [version.version_number for version in api.dag_versions(DAG_ID)]

    def letters(self) -> list:
        return self.store.list(LetterFilter(dag_id=DAG_ID), limit=100)

    def fix_alerts(self) -> list[tuple[str, str, str]]:
        with psycopg.connect(self.running.provider_dsn) as conn:
            return conn.execute(
                "SELECT subject_key, status, body->'links'->>'replay preview' FROM retry_alerts"
                " WHERE kind = 'fix-deployed' ORDER BY id"
            ).fetchall()


@pytest.fixture(scope="module")
def smtp() -> Iterator[SmtpSink]:
    sink = SmtpSink().start()
    yield sink
    sink.stop()


@pytest.fixture(scope="module")
def versioned(pg_server, tmp_path_factory, smtp) -> Iterator[Stack]:
    """An Airflow whose only bundle is a folder of this module, holding version 1 of the DAG."""
    folder = tmp_path_factory.mktemp("versioned-bundle")
    _deploy(folder, "1")
    bundles = [
        {
            "name": "versioned",
            "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle",
            "kwargs": {"path": str(folder), "refresh_interval": 0},
        }
    ]
    extra_env = {
        "AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST": json.dumps(bundles),
        "AIRFLOW__RETRY_PROVIDER__ALERT_NOTIFIERS": json.dumps(NOTIFIERS),
        "AIRFLOW_CONN_SMTP_ALERTS": smtp.connection_json(),
    }
    with running_airflow(
        pg_server, tmp_path_factory.mktemp("fix-home"), "fixdeployed", extra_env=extra_env
    ) as running:
        yield Stack(running, folder, smtp)


def test_a_newer_version_is_noticed_once_per_group_and_nothing_is_replayed(versioned: Stack, monkeypatch):
    """Failed on v1, v2 deployed: one notice, one fix-deployed e-mail linking the preview; a second sweep tells nobody."""
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__ALERT_NOTIFIERS", json.dumps(NOTIFIERS))
    monkeypatch.setenv("AIRFLOW_CONN_SMTP_ALERTS", versioned.smtp.connection_json())
    stack = versioned.stack
    stack.wait_for_dag(DAG_ID)
    stack.api("PATCH", f"/api/v2/dags/{DAG_ID}", json={"is_paused": False})
    body = {"logical_date": datetime.now(timezone.utc).isoformat(), "dag_run_id": "v1-run"}
    stack.api("POST", f"/api/v2/dags/{DAG_ID}/dagRuns", json=body)
    assert stack.wait_for_run(DAG_ID, "v1-run", timeout=300)["state"] == "failed"
    sample_until(lambda: len(versioned.letters()) == len(TASKS), timeout=60)

    with versioned.api() as api:
        number_versions(versioned.store, api)
        assert notice_fixes(versioned.store, api) == ([], [])  # v1 is the newest: nothing to tell
    assert {letter.dag_version_number for letter in versioned.letters()} == {1}
    assert versioned.fix_alerts() == []

    _deploy(versioned.folder, "2")  # the "fix": the dag-processor parses version 2
    sample_until(lambda: 2 in versioned.versions(), timeout=180)
    with versioned.api() as api:
        noticed, errors = notice_fixes(versioned.store, api)
        again = notice_fixes(versioned.store, api)
    assert errors == [] and len(noticed) == 1 and again == ([], [])
    (notice,) = versioned.store.fix_notices()
    assert (notice.version_number, notice.failed_on, notice.letters) == (2, 1, len(TASKS))
    assert notice.line().startswith("failed on version 1; version 2 deployed at ")
    ((key, status, preview),) = versioned.fix_alerts()
    assert key == f"fix:{DAG_ID}:{notice.fingerprint}:v2" and status == "sent"
    assert "/retry-provider/preview?" in preview and f"fingerprint={notice.fingerprint}" in preview
    subjects = [s for s in versioned.smtp.subjects() if "Version 2 of versioned_poison deployed" in s]
    assert len(subjects) == 1
    # nothing replayed on its own: every letter waits in dlq, no replay counted
    assert {(letter.status, letter.replay_count) for letter in versioned.letters()} == {("dlq", 0)}
    # the Dead letters list, on the real api-server: the filter, and the group's line
    listed = stack.api("GET", "/retry-provider/api/letters", params={"newer_version": "yes"})["letters"]
    assert sorted(letter["task_id"] for letter in listed) == sorted(TASKS)
    (group,) = stack.api("GET", "/retry-provider/api/groups", params={"dag_id": DAG_ID})["groups"]
    assert (group["versions"], group["deployed_version"]) == ([1], 2)
