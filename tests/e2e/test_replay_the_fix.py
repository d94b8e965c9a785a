"""Replay that knows the fix, in a real Airflow: issue 29's Proof, with DAG versions.

A bundle folder of this module's own (a ``LocalDagBundle``) holds one DAG whose task fails poison
in 20 mapped instances. Its file is rewritten between the steps, so the dag-processor parses a new
DAG version each time, and every task instance runs the file on disk. The sweep's steps
(``number_versions``, ``notice_fixes``) run here as the sweeper DAG runs them; alerts go by e-mail
through Airflow's real SmtpNotifier to an SMTP server the module starts; replays are asked of the
api-server's JSON API, and its driver threads work them at the shared stack's replay pace.

Version 1 fails and files 20 letters. Version 2, a "fix" that does not work: each root-cause group
is told once, with a link to its replay preview, and nothing is replayed on its own; a replay on it
clears its canary alone, which fails again, and the job stops with the 19 others untouched in dlq.
Version 3, the real fix: the alert names version 3, the preview says the replay runs on it, the
canary succeeds, the rest follow at the rising pace, and all 20 letters end resolved: "20 resolved
by the fix".
"""

from __future__ import annotations

import json
import textwrap
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import psycopg
import pytest

from airflow_retry_provider.dlq.models import Letter
from airflow_retry_provider.dlq.store import DeadLetterStore, LetterFilter
from airflow_retry_provider.dlq.sweeper import notice_fixes, number_versions
from airflow_retry_provider.hooks.airflow_api import AirflowApi, ApiCredentials
from devstack.airflow import ADMIN_PASSWORD, ADMIN_USER
from devstack.provider import fix_notices
from devstack.smtp import SmtpSink
from tests.conftest import running_airflow
from tests.e2e.conftest import SHARED_ENV, sample_until

pytestmark = pytest.mark.e2e

DAG_ID = "versioned_poison"
PARTS = 20
NOTIFIERS = [
    {
        "name": "oncall-mail",
        "class": "airflow.providers.smtp.notifications.smtp.SmtpNotifier",
        "kwargs": {"to": "oncall@example.test", "smtp_conn_id": "smtp_alerts"},
    }
]
DAG_FILE = '''
"""One poison task in {parts} mapped instances; BUILD changes with each deployment (a new DAG version)."""
import pendulum
from airflow.sdk import DAG, task

from airflow_retry_provider import apply_profile

BUILD = "{build}"
FIXED = {fixed}

with DAG(
    "{dag_id}",
    schedule=None,
    start_date=pendulum.datetime(2026, 11, 1, tz="UTC"),
    catchup=False,
    description=f"build {{BUILD}}",
    tags=["test"],
):

    @task
    def part(number: int) -> int:
        if not FIXED:
            raise RuntimeError('relation "positions_versioned" not found')
        return number

    apply_profile(part.expand(number=list(range({parts}))), "report")
'''


def _deploy(folder: Path, build: int, fixed: bool = False) -> None:
    (folder / "versioned_poison.py").write_text(
        textwrap.dedent(DAG_FILE.format(build=build, fixed=fixed, dag_id=DAG_ID, parts=PARTS))
    )


class Stack:
    def __init__(self, running: Any, folder: Path, smtp: SmtpSink) -> None:
        self.running = running
        self.stack = running.stack
        self.folder = folder
        self.smtp = smtp
        self.store = DeadLetterStore.from_dsn(running.provider_dsn)

    def api(self) -> AirflowApi:
        return AirflowApi(ApiCredentials(self.stack.base_url, ADMIN_USER, ADMIN_PASSWORD))

    def deploy(self, build: int, fixed: bool = False) -> None:
        """Rewrite the DAG file: the dag-processor parses it as version ``build`` (``wait_for``).

        Then ask for the file's parse, as the UI's Reparse button does: a parse of the old content
        that ends after the rewrite would otherwise hide it until the next parsing interval.
        """
        _deploy(self.folder, build, fixed)
        token = self.stack.api("GET", f"/api/v2/dags/{DAG_ID}/details")["file_token"]
        self.stack.api("PUT", f"/api/v2/parseDagFile/{token}")

    def wait_for(self, build: int) -> None:
        sample_until(lambda: build in self.versions(), timeout=180)

    def versions(self) -> list[int]:
        with self.api() as api:
            return [version.version_number for version in api.dag_versions(DAG_ID)]

    def sweep_versions(self) -> tuple[list[int], list[str]]:
        """The sweeper's version steps: number the letters' versions, then notice newer ones."""
        with self.api() as api:
            numbered, errors = number_versions(self.store, api)
            assert errors == [], errors
            return notice_fixes(self.store, api)

    def letters(self) -> list[Letter]:
        return self.store.list(LetterFilter(dag_id=DAG_ID), limit=100)

    def newest(self) -> int:
        """The id of the letter filed last (the higher id on a tie): callbacks file at once, so ids
        need not follow the order in which their transactions began (``created_at``)."""
        return max((letter.created_at, letter.id) for letter in self.letters())[1]

    def states(self) -> dict[int, tuple[str, int]]:
        return {letter.id: (letter.status, letter.replay_count) for letter in self.letters()}

    def fix_alerts(self) -> list[tuple[str, str, str]]:
        with psycopg.connect(self.running.provider_dsn) as conn:
            return conn.execute(
                "SELECT subject_key, status, body->'links'->>'replay preview' FROM retry_alerts"
                " WHERE kind = 'fix-deployed' ORDER BY id"
            ).fetchall()

    def deployed_mails(self, version: int) -> list[str]:
        return [s for s in self.smtp.subjects() if f"Version {version} of {DAG_ID} deployed" in s]

    def replay(self, reason: str) -> dict[str, Any]:
        """A replay job of every open letter, on the DAG's latest version, asked of the plugin's JSON API."""
        ids = sorted(self.states())
        body = {"ids": ids, "reason": reason, "run_on_latest_version": True}
        return dict(self.stack.api("POST", "/retry-provider/api/replays", json=body))

    def wait_job(self, job_id: int, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        job: dict[str, Any] = {}
        while time.monotonic() < deadline:
            job = self.stack.api("GET", f"/retry-provider/api/jobs/{job_id}")
            if job["finished"]:
                return job
            time.sleep(1)
        raise AssertionError(f"job {job_id} did not finish: {job}")

    def clears(self, job_id: int) -> list[datetime]:
        with psycopg.connect(self.running.provider_dsn) as conn:
            return [
                row[0]
                for row in conn.execute(
                    "SELECT clear_sent_at FROM retry_replays WHERE job_id = %s ORDER BY clear_sent_at",
                    (job_id,),
                )
            ]


@pytest.fixture(scope="module")
def versioned(pg_server, tmp_path_factory, smtp) -> Iterator[Stack]:
    """An Airflow whose only bundle is a folder of this module, holding version 1 of the DAG."""
    folder = tmp_path_factory.mktemp("versioned-bundle")
    _deploy(folder, 1)
    bundles = [
        {
            "name": "versioned",
            "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle",
            "kwargs": {"path": str(folder), "refresh_interval": 0},
        }
    ]
    pace = {key: value for key, value in SHARED_ENV.items() if "__RETRY_PROVIDER__REPLAY_" in key}
    extra_env = {
        **pace,  # 60 clears a minute after the rising steps, a 15 s lease, drivers looking every 2 s
        "AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST": json.dumps(bundles),
        # a DAG's serialization is rewritten at most this often (30 s by default): version 3 follows
        # version 2 within seconds here, and would otherwise wait for the rest of those 30 s
        "AIRFLOW__CORE__MIN_SERIALIZED_DAG_UPDATE_INTERVAL": "1",
        "AIRFLOW__RETRY_PROVIDER__ALERT_NOTIFIERS": json.dumps(NOTIFIERS),
        "AIRFLOW_CONN_SMTP_ALERTS": smtp.connection_json(),
    }
    with running_airflow(
        pg_server, tmp_path_factory.mktemp("fix-home"), "replayfix", extra_env=extra_env
    ) as running:
        yield Stack(running, folder, smtp)


def _fails_on_version_1(versioned: Stack) -> list[int]:
    """Version 1's run fails in 20 mapped instances: 20 letters in dlq, numbered v1, nothing to tell."""
    stack = versioned.stack
    stack.wait_for_dag(DAG_ID)
    stack.api("PATCH", f"/api/v2/dags/{DAG_ID}", json={"is_paused": False})
    body = {"logical_date": datetime.now(timezone.utc).isoformat(), "dag_run_id": "v1-run"}
    stack.api("POST", f"/api/v2/dags/{DAG_ID}/dagRuns", json=body)
    assert stack.wait_for_run(DAG_ID, "v1-run", timeout=300)["state"] == "failed"
    sample_until(lambda: len(versioned.letters()) == PARTS, timeout=120)
    assert sorted(letter.map_index for letter in versioned.letters()) == list(range(PARTS))
    assert versioned.sweep_versions() == ([], [])  # v1 is the newest: nothing to tell
    assert {letter.dag_version_number for letter in versioned.letters()} == {1}
    assert versioned.fix_alerts() == []
    assert set(versioned.states().values()) == {("dlq", 0)}
    return sorted(versioned.states())


def _version_2_is_noticed_once_and_nothing_is_replayed(versioned: Stack, ids: list[int]) -> None:
    """One notice and one fix-deployed e-mail linking the group's preview; a second sweep tells nobody."""
    noticed, errors = versioned.sweep_versions()
    assert errors == [] and len(noticed) == 1
    assert versioned.sweep_versions() == ([], [])
    (notice,) = fix_notices(versioned.running.provider_dsn)
    assert (notice.version_number, notice.failed_on, notice.letters) == (2, 1, PARTS)
    assert notice.line().startswith("failed on version 1; version 2 deployed at ")
    ((key, status, preview),) = versioned.fix_alerts()
    assert key == f"fix:{DAG_ID}:{notice.fingerprint}:v2" and status == "sent"
    assert "/retry-provider/preview?" in preview and f"fingerprint={notice.fingerprint}" in preview
    assert len(versioned.deployed_mails(2)) == 1
    # nothing replayed on its own: every letter waits in dlq, no replay counted
    assert set(versioned.states().values()) == {("dlq", 0)}
    # the Dead letters list, on the real api-server: the filter, and the group's line
    stack = versioned.stack
    listed = stack.api("GET", "/retry-provider/api/letters", params={"newer_version": "yes"})["letters"]
    assert sorted(letter["id"] for letter in listed) == ids
    (group,) = stack.api("GET", "/retry-provider/api/groups", params={"dag_id": DAG_ID})["groups"]
    assert (group["versions"], group["deployed_version"]) == ([1], 2)


def _its_canary_fails_and_spares_19_letters(versioned: Stack, ids: list[int]) -> None:
    """The replay on version 2 clears its canary (the newest) alone; it fails again, the job stops, 19 keep their count.

    Once the job stopped (the canary's task ran version 2), version 3, the real fix, is deployed.
    """
    first = versioned.replay("the fix in version 2")
    canary = first["canary"]["letter_id"]
    assert canary == versioned.newest() and first["fix_version"] == "v2"
    job = versioned.wait_job(first["id"], timeout=300)
    versioned.deploy(3, fixed=True)  # the real fix, parsed while the stop is checked
    assert job["status"] == "stopped" and job["stop_reason"].startswith(f"canary letter {canary} failed")
    assert job["counts"] == {"cleared": 1, "stopped": 19}
    states = versioned.states()
    assert {states[i] for i in ids if i != canary} == {("dlq", 0)}
    assert states[canary] == ("dlq", 1)
    told = f"Replay job {first['id']} stopped: canary letter {canary} failed"
    sample_until(lambda: any(told in s for s in versioned.smtp.subjects()), timeout=60)


def _version_3_is_named_by_the_alert_and_the_preview(versioned: Stack, ids: list[int]) -> None:
    """The alert names version 3 (its group failed on v1 and v2, the canary's try), and so does the preview."""
    versioned.wait_for(3)
    noticed, errors = versioned.sweep_versions()
    assert errors == [] and len(noticed) == 1
    (notice,) = [n for n in fix_notices(versioned.running.provider_dsn) if n.version_number == 3]
    assert (notice.failed_on, notice.letters) == (2, PARTS)
    assert notice.line().startswith("failed on version 2; version 3 deployed at ")
    keys = [(key, status) for key, status, _ in versioned.fix_alerts()]
    assert keys == [(f"fix:{DAG_ID}:{notice.fingerprint}:v{n}", "sent") for n in (2, 3)]
    assert len(versioned.deployed_mails(3)) == 1
    assert {letter.dag_version_number for letter in versioned.letters()} == {1, 2}
    stack = versioned.stack
    preview = stack.api(
        "POST", "/retry-provider/api/preview", json={"ids": ids, "run_on_latest_version": True}
    )
    assert preview["count"] == PARTS and preview["runs_on"] == ["v3"]
    link = urlsplit(versioned.fix_alerts()[-1][2])  # the alert's link to the group's preview
    page = httpx.get(
        f"{stack.base_url}{link.path}?{link.query}&latest=true",  # on the DAG's latest version
        headers={"Authorization": f"Bearer {stack.token()}", "Accept": "text/html"},
        timeout=60,
    )
    assert page.status_code == 200 and "The replay runs on: <b>v3</b>" in page.text
    assert f"{PARTS}</b> letters will be replayed" in page.text


def _the_fix_resolves_all_20_at_the_rising_pace(versioned: Stack, ids: list[int]) -> None:
    """The canary succeeds; one follows at 1/min, five at 5/min, then the rest; all 20 resolved by the fix."""
    second = versioned.replay("the real fix in version 3")
    assert second["fix_version"] == "v3" and second["canary"]["letter_id"] == versioned.newest()
    job = versioned.wait_job(second["id"], timeout=600)
    assert job["status"] == "done" and job["counts"] == {"cleared": PARTS}, job["counts"]
    sent = versioned.clears(second["id"])
    gaps = [(b - a).total_seconds() for a, b in zip(sent, sent[1:], strict=False)]
    assert gaps[0] >= 59  # after the canary's success, one at 1/min
    assert all(gap >= 11.5 for gap in gaps[1:6])  # then five at 5/min
    try:
        sample_until(
            lambda: {status for status, _ in versioned.states().values()} == {"resolved"}, timeout=300
        )
    except TimeoutError:  # say which letters did not end resolved, and how
        raise AssertionError(f"letters not all resolved: {versioned.states()}") from None
    assert sorted(count for _, count in versioned.states().values()) == [0] * (PARTS - 1) + [1]
    verdict = versioned.stack.api("GET", f"/retry-provider/api/jobs/{second['id']}")["verdict"]
    assert verdict["summary"] == "20 resolved by the fix"


def test_a_broken_fix_costs_one_canary_and_the_real_fix_resolves_all_20(versioned: Stack, monkeypatch):
    """v1 fails 20 times; v2 (broken) is noticed, its canary fails, 19 untouched; v3 is noticed, previewed, resolves all 20."""
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__ALERT_NOTIFIERS", json.dumps(NOTIFIERS))
    monkeypatch.setenv("AIRFLOW_CONN_SMTP_ALERTS", versioned.smtp.connection_json())
    ids = _fails_on_version_1(versioned)
    versioned.deploy(2)  # the "fix" that does not work
    versioned.wait_for(2)
    _version_2_is_noticed_once_and_nothing_is_replayed(versioned, ids)
    _its_canary_fails_and_spares_19_letters(versioned, ids)  # and deploys version 3 once it stopped
    _version_3_is_named_by_the_alert_and_the_preview(versioned, ids)
    _the_fix_resolves_all_20_at_the_rising_pace(versioned, ids)
