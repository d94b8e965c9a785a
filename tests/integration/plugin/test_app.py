"""The dead-letter pages and JSON API through FastAPI's TestClient, with Airflow's real auth.

The app comes from the factory, on a fresh provider database; Airflow's SimpleAuthManager is
initialised and its login app mounted as the api-server does, in multi-team mode so that DAGs
can belong to teams a user is not in. Users: ``admin``; ``viewer`` (no team: sees only DAGs of no
team); ``ops_a`` (may edit team_a's DAGs); ``viewer_a`` (may only read team_a's DAGs). Airflow's
REST API, which preview and replay call as the user, is a closed port here: its failure paths
are exercised; the real clears run in ``tests/e2e/test_ui_browser.py``.
"""

from __future__ import annotations

import csv
import io
import json
import re
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient

from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.dlq.store import DeadLetterStore
from airflow_retry_provider.hooks.airflow_api import AirflowApi, ApiCredentials
from airflow_retry_provider.plugin.app import acting_user_api, create_app
from devstack.postgres import free_port
from tests.conftest import metadata_dsn
from tests.factories import new_letter
from tests.integration.dlq.support import open_job_ids
from tests.local_airflow import AnsweringAirflow, answering_airflow

DAG_A, DAG_B, DAG_FREE = "ui_dag_team_a", "ui_dag_team_b", "ui_dag_no_team"
PASSWORDS = {"admin": "admin-pw", "viewer": "viewer-pw", "ops_a": "ops-a-pw", "viewer_a": "viewer-a-pw"}
USERS = "admin:admin,viewer:viewer,ops_a:user:team_a,viewer_a:viewer:team_a"

BASE = new_letter(
    dag_id=DAG_A,
    run_id="scheduled__2026-11-29T00:00:00+00:00",
    task_id="load",
    work_unit_key="ws-1/2026-11-29",
    data_interval_start=datetime(2026, 11, 29, tzinfo=timezone.utc),
    data_interval_end=datetime(2026, 11, 30, tzinfo=timezone.utc),
    workspace_id="ws-1",
    rule="http-404",
    exception_type="HTTPError",
    message="404 Not Found: job 7 does not exist",
    reason="poison: not retried",
    fingerprint="fp-404",
    code_version="v1",
    payload_ref="s3://bucket/jobs/7.json",
)


@pytest.fixture(scope="module")
def airflow_auth(airflow_db, tmp_path_factory) -> Iterator[dict[str, str]]:
    """Multi-team SimpleAuthManager users, teams, bundles and DAGs in Airflow's metadata DB; their tokens."""
    from airflow.api_fastapi.app import create_auth_manager
    from airflow.models.dag import DagModel
    from airflow.models.dagbundle import DagBundleModel
    from airflow.models.team import Team
    from airflow.utils.session import create_session

    home = Path(tmp_path_factory.mktemp("ui-auth"))
    passwords = home / "passwords.json"
    passwords.write_text(json.dumps(PASSWORDS))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AIRFLOW__CORE__MULTI_TEAM", "True")
        mp.setenv(
            "AIRFLOW__CORE__AUTH_MANAGER",
            "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
        )
        mp.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS", USERS)
        mp.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE", str(passwords))
        mp.setenv(
            "AIRFLOW__API_AUTH__JWT_SECRET",
            "test-secret-for-the-plugin-tests-0123456789-0123456789-0123456789-abcdef",
        )
        mp.setenv("AIRFLOW__RETRY_PROVIDER__REPLAY_RATE_PER_MINUTE", "600")
        with create_session() as session:
            for team_name, bundle_name, dag_id in (
                ("team_a", "ui_bundle_a", DAG_A),
                ("team_b", "ui_bundle_b", DAG_B),
            ):
                team = session.get(Team, team_name) or Team(name=team_name)
                bundle = session.get(DagBundleModel, bundle_name) or DagBundleModel(name=bundle_name)
                if team not in bundle.teams:
                    bundle.teams.append(team)
                session.add_all([team, bundle])
                session.flush()
                if session.get(DagModel, dag_id) is None:
                    session.add(
                        DagModel(
                            dag_id=dag_id,
                            bundle_name=bundle_name,
                            max_active_tasks=16,
                            max_consecutive_failed_dag_runs=0,
                            has_task_concurrency_limits=False,
                        )
                    )
        create_auth_manager().init()
        app = create_app(db=ProviderDatabase(lambda: None), driver=False)
        _mount_auth(app)
        with TestClient(app) as client:
            tokens = {}
            for user, password in PASSWORDS.items():
                answer = client.post("/auth/token", json={"username": user, "password": password})
                assert answer.status_code == 201, answer.text
                tokens[user] = answer.json()["access_token"]
        yield tokens


def _mount_auth(app) -> None:
    """Airflow's auth manager on the app, as the api-server's ``init_auth_manager`` does."""
    from airflow.api_fastapi.app import init_auth_manager

    init_auth_manager(app)


class Ui:
    """The app under test on a fresh provider database, and helpers to call it as a user."""

    def __init__(self, dsn: str, tokens: dict[str, str], airflow_url: str | None = None) -> None:
        self.dsn = dsn
        self.tokens = tokens
        self.store = DeadLetterStore.from_dsn(dsn)
        closed = f"http://127.0.0.1:{free_port()}"  # Airflow's REST API: nothing listens here
        previews = airflow_url or closed  # where the preview's dry-run (as the user) goes
        self.app = create_app(
            db=self.store.db,
            api_factory=lambda request, token: acting_user_api(previews, token, timeout=5),
            driver_api=lambda: AirflowApi(ApiCredentials(closed, "driver", "pw"), timeout=5),
        )
        _mount_auth(self.app)
        self.client = TestClient(self.app)

    def headers(self, user: str | None, html: bool = False) -> dict[str, str]:
        headers = {"Accept": "text/html"} if html else {}
        if user:
            headers["Authorization"] = f"Bearer {self.tokens[user]}"
        return headers

    def get(self, path: str, user: str | None = "admin", html: bool = False, **params: Any):
        return self.client.get(path, headers=self.headers(user, html), params=params)

    def post(self, path: str, body: dict[str, Any], user: str | None = "admin"):
        return self.client.post(path, headers=self.headers(user), json=body)

    def file(self, n: int = 1, **changes: Any) -> list[int]:
        ids = []
        for i in range(n):
            letter = replace(
                BASE,
                run_id=f"{changes.get('run_id', BASE.run_id)}-{i}",
                **{k: v for k, v in changes.items() if k != "run_id"},
            )
            ids.append(self.store.file(letter, replay_cap=3).letter_id)
        return ids

    def sql(self, statement: str, params: dict[str, Any] | None = None) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(statement, params or {})


@contextmanager
def _app(dsn: str, tokens: dict[str, str], airflow_url: str | None = None) -> Iterator[Ui]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AIRFLOW__CORE__MULTI_TEAM", "True")
        mp.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS", USERS)
        mp.setenv(
            "AIRFLOW__API_AUTH__JWT_SECRET",
            "test-secret-for-the-plugin-tests-0123456789-0123456789-0123456789-abcdef",
        )
        mp.setenv("AIRFLOW__RETRY_PROVIDER__REPLAY_RATE_PER_MINUTE", "600")
        found = Ui(dsn, tokens, airflow_url)
        try:
            yield found
        finally:
            found.app.state.driver_thread.stop()


@pytest.fixture
def ui(pg_dsn, airflow_auth) -> Iterator[Ui]:
    """The app on a fresh provider database, with the module's users."""
    with _app(pg_dsn, airflow_auth) as found:
        yield found


@pytest.fixture
def answered(pg_dsn, airflow_auth) -> Iterator[tuple[Ui, AnsweringAirflow]]:
    """The app whose preview dry-runs go to a local Airflow stand-in that answers for the task instances a test sets."""
    with answering_airflow() as fake, _app(pg_dsn, airflow_auth, fake.url) as found:
        yield found, fake


def text_of(html: str) -> str:
    """The page's visible text, tags removed and spaces collapsed."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def audit_entries(event: str) -> list[tuple[str, str | None, str]]:
    """Rows of Airflow's Audit Log (table ``log``) for ``event``: (owner, dag_id, extra)."""
    with psycopg.connect(metadata_dsn()) as conn:
        return [
            tuple(row)
            for row in conn.execute(
                "SELECT owner, dag_id, extra FROM log WHERE event = %s ORDER BY id", (event,)
            ).fetchall()
        ]


# -- authentication -------------------------------------------------------------------------------

PROTECTED = [
    ("GET", "/"),  # the list page
    ("GET", "/letters/1"),  # a letter
    ("GET", "/preview?ids=1"),  # the preview page
    ("GET", "/jobs/1"),  # replay progress
    ("GET", f"/ti?dag_id={DAG_A}&run_id=r&task_id=t"),  # the task-instance tab
    ("GET", "/api/letters"),  # JSON list
    ("GET", "/api/groups"),  # JSON groups
    ("GET", "/api/letters/1"),  # JSON letter
    ("GET", "/api/export.csv"),  # export
    ("GET", "/api/export.json"),  # export
    ("GET", "/api/jobs/1"),  # JSON progress
    ("POST", "/api/jobs/1/cancel"),  # cancel a replay job
    ("GET", f"/api/task-instance?dag_id={DAG_A}&run_id=r&task_id=t"),  # JSON task-instance history
    ("GET", f"/tries?dag_id={DAG_A}&run_id=r&task_id=t"),  # the Retries tab
    ("GET", f"/api/tries?dag_id={DAG_A}&run_id=r&task_id=t"),  # JSON tries
    ("POST", "/api/preview"),  # dry-run
    ("POST", "/api/replays"),  # replay
    ("POST", "/api/park"),  # park
    ("POST", "/api/dismiss"),  # dismiss
    ("GET", "/dependencies"),  # the Dependencies page
    ("GET", "/api/dependencies"),  # JSON breakers
    ("POST", "/api/dependencies/positions_db/force"),  # force a breaker
]


@pytest.mark.parametrize(("method", "path"), PROTECTED)
def test_every_route_answers_401_without_a_token(ui: Ui, method: str, path: str):
    """No Airflow token, no answer: every page and API route is behind Airflow's authentication."""
    ui.file()
    answer = ui.client.request(method, path, json={"ids": [1], "reason": "r", "fix_version": "f"})
    assert answer.status_code == 401
    assert "letter" not in answer.text.lower() or "sign in" in answer.text.lower()


def test_a_forged_token_is_refused(ui: Ui):
    """A token Airflow did not sign is refused like no token at all."""
    answer = ui.client.get("/api/letters", headers={"Authorization": "Bearer not.a.token"})
    assert answer.status_code in (401, 403)


def test_a_page_without_a_token_offers_airflows_login(ui: Ui):
    """A browser without a session gets a 401 page linking to Airflow's login, not JSON."""
    answer = ui.get("/", user=None, html=True)
    assert answer.status_code == 401
    assert "Sign in to Airflow" in answer.text and "/auth/login?next=" in answer.text


def test_the_ui_session_cookie_authenticates_like_the_header(ui: Ui):
    """Airflow's ``_token`` cookie (the UI's session) is accepted where the bearer header is."""
    ui.file()
    ui.client.cookies.set("_token", ui.tokens["admin"])
    answer = ui.client.get("/api/letters")
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize("path", ["/api/replays", "/api/park", "/api/dismiss"])
def test_state_changing_routes_refuse_get(ui: Ui, path: str):
    """Replay, park and dismiss are POST only: a GET (a link, an image tag) changes nothing."""
    (letter_id,) = ui.file()
    answer = ui.get(path, ids=letter_id, reason="r", fix_version="f")
    assert answer.status_code == 405
    assert ui.store.get(letter_id).status == "dlq"  # type: ignore[union-attr]


def test_a_form_post_is_not_accepted_for_an_action(ui: Ui):
    """Actions take a JSON body only, so a cross-site HTML form cannot drive them (415, before the route)."""
    (letter_id,) = ui.file()
    answer = ui.client.post(
        "/api/park", headers=ui.headers("admin"), data={"ids": str(letter_id), "reason": "x"}
    )
    assert answer.status_code == 415
    assert ui.store.get(letter_id).status == "dlq"  # type: ignore[union-attr]


# -- authorization --------------------------------------------------------------------------------


def test_lists_counts_groups_and_exports_hide_dags_the_user_may_not_read(ui: Ui):
    """viewer_a reads team_a's DAG and the team-less one; team_b's letters appear nowhere, not even in counts."""
    ui.file(3, dag_id=DAG_A)
    ui.file(5, dag_id=DAG_B, run_id="b")
    ui.file(2, dag_id=DAG_FREE, run_id="free")
    listed = ui.get("/api/letters", user="viewer_a").json()
    assert {letter["dag_id"] for letter in listed["letters"]} == {DAG_A, DAG_FREE}
    assert listed["count"] == 5
    assert ui.get("/api/letters", user="viewer_a", dag_id=DAG_B).json() == {
        "letters": [],
        "count": 0,
        "count_is_capped": False,
        "next": None,
    }
    groups = ui.get("/api/groups", user="viewer_a").json()
    assert (groups["total_letters"], groups["total_groups"]) == (5, 1)
    for query in ({}, {"view": "groups"}):
        answer = ui.get("/", user="viewer_a", html=True, **query)
        assert answer.status_code == 200, query
        assert DAG_B not in answer.text and DAG_A in answer.text and DAG_FREE in answer.text, query
    export = ui.get("/api/export.csv", user="viewer_a")
    assert export.status_code == 200
    assert DAG_B not in export.text and export.text.count(DAG_A) >= 3 and DAG_FREE in export.text
    assert len(ui.get("/api/export.json", user="viewer_a").json()["letters"]) == 5
    assert ui.get("/api/letters", user="viewer").json()["count"] == 2  # no team: only the team-less DAG
    assert ui.get("/api/letters", user="admin").json()["count"] == 10


@pytest.mark.parametrize("path", ["/letters/{id}", "/api/letters/{id}"])
def test_a_letter_of_a_dag_the_user_may_not_read_answers_like_a_missing_one(ui: Ui, path: str):
    """A team_b letter, opened as a team_a user, is a 404 identical to a letter that does not exist."""
    (letter_id,) = ui.file(dag_id=DAG_B, message="secret-ish text of team b")
    html = path.startswith("/letters")
    hidden = ui.get(path.format(id=letter_id), user="viewer_a", html=html)
    admin = ui.get(path.format(id=letter_id), user="admin", html=html)
    assert admin.status_code == 200 and "secret-ish text of team b" in admin.text  # the text is there to hide
    ui.sql("DELETE FROM retry_dead_letters WHERE id = %(id)s", {"id": letter_id})
    missing = ui.get(path.format(id=letter_id), user="viewer_a", html=html)
    assert hidden.status_code == missing.status_code == 404

    def unnonced(text: str) -> str:
        return re.sub(r'nonce="[^"]*"', "", text)

    assert unnonced(hidden.text) == unnonced(missing.text)
    assert "team b" not in hidden.text


def test_the_task_instance_tab_needs_read_access_to_that_dag(ui: Ui):
    """The tab checks ``requires_access_dag`` on its dag_id: team_b's instance is 403 for viewer_a."""
    ui.file(dag_id=DAG_B)
    params = {"dag_id": DAG_B, "run_id": BASE.run_id + "-0", "task_id": "load"}
    assert ui.get("/ti", user="viewer_a", **params).status_code == 403
    assert ui.get("/api/task-instance", user="viewer_a", **params).status_code == 403
    assert ui.get("/api/task-instance", user="admin", **params).status_code == 200


@pytest.mark.parametrize(
    ("user", "dag_id", "path", "code"),
    [
        ("viewer_a", DAG_A, "/api/replays", 403),  # may read team_a but not edit: no replay
        ("viewer_a", DAG_A, "/api/park", 403),  # nor park
        ("viewer_a", DAG_A, "/api/dismiss", 403),  # nor dismiss
        ("ops_a", DAG_B, "/api/replays", 404),  # may not even read team_b: as if the letter did not exist
        ("ops_a", DAG_B, "/api/dismiss", 404),  # idem
        ("viewer", DAG_FREE, "/api/park", 403),  # a viewer edits no DAG, even a team-less one
    ],
)
def test_actions_need_edit_access_on_the_letters_dag(ui: Ui, user: str, dag_id: str, path: str, code: int):
    """Without edit access on the letter's DAG an action is refused, changes nothing and writes no replay."""
    (letter_id,) = ui.file(dag_id=dag_id)
    body = {"ids": [letter_id], "reason": "try", "fix_version": "v2"}
    if path != "/api/replays":
        body.pop("fix_version")
    answer = ui.post(path, body, user=user)
    assert answer.status_code == code, answer.text
    letter = ui.store.get(letter_id)
    assert letter is not None and letter.status == "dlq"
    assert ui.store.replays(letter_id) == []


def test_all_matching_takes_only_readable_letters_and_still_needs_edit_access(ui: Ui):
    """ "All that match" never reaches into unreadable DAGs; ops_a parks team_a's letters and no others."""
    a_ids = ui.file(2, dag_id=DAG_A)
    (b_id,) = ui.file(dag_id=DAG_B, run_id="b")
    answer = ui.post("/api/park", {"all_matching": True, "filter": {"dag_id": DAG_A}}, user="ops_a")
    assert answer.status_code == 200, answer.text
    assert sorted(answer.json()["changed"]) == sorted(a_ids)
    assert ui.store.get(b_id).status == "dlq"  # type: ignore[union-attr]
    everything = ui.post("/api/park", {"all_matching": True, "filter": {}}, user="viewer")
    assert everything.status_code == 404  # viewer sees no dlq letter of team-less DAGs: nothing selected


# -- actions --------------------------------------------------------------------------------------


def test_park_and_dismiss_take_the_actor_from_airflow_and_land_in_the_audit_log(ui: Ui):
    """The acting user is the token's, never the body's; each action is in Airflow's Audit Log."""
    first, second = ui.file(2)
    # this test's own Audit Log entries, whatever other tests wrote there; a UUID with its dashes
    # (32 bare hex digits look like an API key, and redaction hides them)
    mark = str(uuid.uuid4())
    impostor = ui.post(
        "/api/park", {"ids": [first], "reason": f"look later {mark}", "actor": "mallory"}, user="ops_a"
    )
    assert impostor.status_code == 422 and "actor" in impostor.text  # the body cannot name the actor
    parked = ui.post("/api/park", {"ids": [first], "reason": f"look later {mark}"}, user="ops_a")
    assert parked.json() == {"changed": [first], "unchanged": []}
    letter = ui.store.get(first)
    assert letter is not None and letter.status == "parked"
    assert letter.status_reason == f"parked by ops_a: look later {mark}"
    assert ui.post("/api/dismiss", {"ids": [second], "reason": ""}, user="ops_a").status_code == 422
    dismissed = ui.post(
        "/api/dismiss", {"ids": [first, second], "reason": f"duplicate job {mark}"}, user="ops_a"
    )
    assert sorted(dismissed.json()["changed"]) == [first, second]
    assert ui.store.get(second).status_reason == f"dismissed by ops_a: duplicate job {mark}"  # type: ignore[union-attr]
    assert [owner for owner, _, extra in audit_entries("retry_provider_park") if mark in extra] == ["ops_a"]
    assert [owner for owner, _, extra in audit_entries("retry_provider_dismiss") if mark in extra] == [
        "ops_a"
    ]


def test_preview_returns_the_exact_selection_count_pace_and_refusals(ui: Ui):
    """Preview lists each replayable letter, refuses the parked one, and gives the pace; it changes nothing."""
    ids = ui.file(3)
    ui.post("/api/park", {"ids": [ids[2]]}, user="admin")
    answer = ui.post("/api/preview", {"ids": ids}, user="ops_a").json()
    assert [item["letter"]["id"] for item in answer["items"]] == ids[:2]
    assert (
        answer["count"] == 2 and answer["rate_per_minute"] == 600 and answer["seconds"] == pytest.approx(0.1)
    )
    assert [r["letter_id"] for r in answer["refused"]] == [ids[2]]
    assert all("ConnectError" in item["error"] for item in answer["items"])  # Airflow's API is not there
    page = ui.get("/preview", user="ops_a", html=True, ids=ids).text
    assert "2 letters will be replayed" in text_of(page) and "Nothing has changed yet." in text_of(page)
    assert "It starts with one canary, the newest letter" in text_of(page)
    assert "the run's own" in answer["items"][0]["runs_on"]
    latest = ui.post("/api/preview", {"ids": ids, "run_on_latest_version": True}, user="ops_a").json()
    assert latest["run_on_latest_version"] is True
    assert latest["runs_on"][0].startswith("the latest version (Airflow did not say which")
    page = ui.get("/preview", user="ops_a", html=True, ids=ids, latest="true").text
    assert "The replay runs on: the latest version" in text_of(page)
    assert [ui.store.get(i).status for i in ids] == ["dlq", "dlq", "parked"]  # type: ignore[union-attr]


def test_a_replay_names_its_canary_or_none_and_refuses_one_outside_the_selection(ui: Ui):
    """``canary``: a letter id outside the selection is a 400 naming it; false makes a job without one; absent, the newest."""
    ids = ui.file(2)
    outside = ui.post("/api/replays", {"ids": ids, "reason": "r", "fix_version": "v2", "canary": ids[1] + 99})
    assert outside.status_code == 400 and f"canary: letter {ids[1] + 99}" in outside.text
    assert ui.store.replays(ids[0]) == [] and ui.store.replays(ids[1]) == []
    none = ui.post("/api/replays", {"ids": ids, "reason": "r", "fix_version": "v2", "canary": False}).json()
    assert none["canary"] is None
    ui.post(f"/api/jobs/{none['id']}/cancel", {})
    newest = ui.post("/api/replays", {"ids": ids, "reason": "r", "fix_version": "v2"}).json()
    assert newest["canary"]["letter_id"] == max(ids)
    missing = ui.post("/api/replays", {"ids": ids, "reason": "r"})
    assert missing.status_code == 400 and "fix_version" in missing.text


def test_the_preview_form_offers_each_answered_letter_as_the_canary_the_newest_chosen_or_none(answered):
    """Of three letters the dry-run answers for two: the form offers those two as the canary (the newest chosen) and "no canary"."""
    ui, fake = answered
    ids = ui.file(3)
    for i in range(3):
        fake.set(DAG_A, f"{BASE.run_id}-{i}", "load", "failed", BASE.try_number)
    answer, gone = fake.answer, f"{BASE.run_id}-2"

    def run_gone(method: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if body.get("dag_run_id") == gone:  # the newest letter's run was deleted: its dry-run fails
            return 404, {"detail": f"DagRun {gone} not found"}
        return answer(method, path, body)

    fake.answer = run_gone  # type: ignore[method-assign]
    page = ui.get("/preview", user="ops_a", html=True, ids=ids).text
    choice = page[page.index('<select id="canary">') : page.index("</select>")]
    assert re.findall(r'<option value="(\w+)"( selected)?>', choice) == [
        (str(ids[0]), ""),
        (str(ids[1]), " selected"),  # the newest the dry-run answered for, as a job picks it
        ("none", ""),
    ]
    assert f"letter {ids[1]} · load · {BASE.run_id}-1 (the newest)" in text_of(choice)
    assert f"the newest letter ({ids[1]}; pick another, or none, below)" in text_of(page)
    assert "canary: canaryChoice()" in page  # the form sends the choice as the job's canary
    assert ui.store.replays(ids[0]) == []  # the preview changed nothing
    alone = ui.get("/preview", user="ops_a", html=True, ids=ids[1:]).text
    assert 'id="confirm"' in alone and 'id="canary"' not in alone  # one letter ready: no canary to choose


def test_replay_records_the_user_reason_and_fix_and_reports_progress(ui: Ui):
    """A replay runs as the signed-in user: its replay row, status change and progress are recorded."""
    (letter_id,) = ui.file()
    mark = f"upstream fixed {uuid.uuid4()}"  # this test's own Audit Log entry (a dashed UUID stays readable)
    assert ui.post("/api/replays", {"ids": [letter_id], "reason": "", "fix_version": "v2"}).status_code == 422
    started = ui.post(
        "/api/replays",
        {"ids": [letter_id], "reason": mark, "fix_version": "v2"},
        user="ops_a",
    )
    assert started.status_code == 202, started.text
    job = started.json()
    assert (job["actor"], job["total"]) == ("ops_a", 1)
    deadline = time.monotonic() + 30
    while not job["finished"] and time.monotonic() < deadline:
        time.sleep(0.2)
        job = ui.get(f"/api/jobs/{job['id']}", user="ops_a").json()
    assert job["finished"] and job["counts"] == {"clear-failed": 1}  # Airflow's API is not there in this test
    assert (job["status"], job["source"], job["downstream"]) == ("done", "api", True)
    (replay,) = ui.store.replays(letter_id)
    assert (replay.actor, replay.reason, replay.fix_version, replay.outcome) == (
        "ops_a",
        mark,
        "v2",
        "clear-failed",
    )
    assert ui.store.get(letter_id).status == "dlq"  # type: ignore[union-attr]  # released, for another try
    assert [owner for owner, _, extra in audit_entries("retry_provider_replay") if mark in extra] == ["ops_a"]
    assert ui.get(f"/jobs/{job['id']}", user="ops_a", html=True).status_code == 200
    assert ui.get(f"/api/jobs/{job['id']}", user="viewer").status_code == 403  # not a DAG viewer may read
    history = ui.get(f"/letters/{letter_id}", user="ops_a").text
    assert mark in history and "clear-failed" in history
    assert "failed replays so far: 0" in history  # a clear Airflow refused is not a failed replay
    events = ui.get(f"/api/letters/{letter_id}", user="ops_a").json()["history"]
    assert [(e["event"], e["source"], e["actor"]) for e in events] == [
        ("filed", "callback", None),
        ("claimed", "api", "ops_a"),
        ("clear-failed", "driver", None),
    ]


def test_jobs_are_read_from_the_table_and_bad_job_requests_change_nothing(ui: Ui):
    """A job created in the table is read by any app; unknown id 404, cancel 409 once finished, a replaying letter 409."""
    from airflow_retry_provider.dlq.replay import ReplayEngine, ReplayRequest
    from airflow_retry_provider.dlq.store import JobStore

    driver = ui.app.state.driver_thread  # a page-only app, as "any app" here: its driver would start on the
    driver.enabled = False  # first request and could take the job before the cancel (a race seen in CI)
    driver.stop()
    first, second = ui.file(2)
    jobs = JobStore(ui.store.db)
    job_id = jobs.create(ReplayRequest("cli-user", "from a shell", "v3"), [ui.store.get(first)])  # type: ignore[list-item]
    cancelled = ui.post(f"/api/jobs/{job_id}/cancel", {}, user="ops_a")
    assert cancelled.status_code == 200, cancelled.text
    assert (cancelled.json()["status"], cancelled.json()["letters_left_in_dlq"]) == ("cancelled", 1)
    answer = ui.get(f"/api/jobs/{job_id}", user="ops_a")
    assert answer.json()["counts"] == {"cancelled": 1} and answer.headers["x-retry-provider-worker"].isdigit()
    again = ui.post(f"/api/jobs/{job_id}/cancel", {}, user="ops_a")
    assert again.status_code == 409 and f"job: {job_id} is cancelled" in again.json()["detail"]
    assert ui.get("/api/jobs/424242", user="ops_a").status_code == 404
    assert ui.post("/api/jobs/424242/cancel", {}, user="ops_a").status_code == 404
    ReplayEngine(ui.store, replay_cap=3).claim(ui.store.get(second), ReplayRequest("x", "y", "z"))  # type: ignore[arg-type]
    refused = ui.post("/api/replays", {"ids": [second], "reason": "again", "fix_version": "v2"}, user="ops_a")
    assert refused.status_code == 409
    assert refused.json()["detail"] == f"nothing to replay: letter {second}: status is replaying, not dlq"
    assert open_job_ids(ui.dsn) == [] and len(ui.store.replays(second)) == 1
    assert ui.store.get(first).status == "dlq"  # type: ignore[union-attr]


# -- pages ----------------------------------------------------------------------------------------


def _pages(letter_id: int) -> list[tuple[str, dict[str, Any], str]]:
    """Every page that shows a letter: (path, query, a marker that this letter is on it)."""
    return [
        ("/", {}, f'data-letter="{letter_id}"'),
        (f"/letters/{letter_id}", {}, f"Letter {letter_id}"),
        ("/", {"view": "groups"}, f'/letters/{letter_id}">letter {letter_id}</a>'),
        ("/preview", {"ids": letter_id}, f'data-letter="{letter_id}"'),  # shows no error text
    ]


def test_an_error_with_a_script_tag_is_shown_as_text(ui: Ui):
    """Error text is HTML-escaped on every page: a ``<script>`` in a message is shown as text and never runs."""
    evil = '<script>alert("x")</script> & <img src=x onerror=alert(1)>'
    (letter_id,) = ui.file(message=evil, exception_type="<b>Bad</b>", workspace_id="<i>ws</i>")
    for path, query, marker in _pages(letter_id):
        answer = ui.get(path, html=True, **query)
        page = answer.text
        assert answer.status_code == 200, (path, query, answer.status_code)
        assert marker in page, (path, query)
        assert "<script>alert" not in page and "<img src=x" not in page and "<b>Bad</b>" not in page, path
    for path, query, _ in _pages(letter_id)[:3]:  # the pages that show the error: escaped, as text
        page = ui.get(path, html=True, **query).text
        assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page, (path, query)
        assert "&lt;b&gt;Bad&lt;/b&gt;" in page, (path, query)


def test_no_secret_appears_on_a_page(ui: Ui):
    """Messages are redacted again on display and the user's token is never rendered."""
    (letter_id,) = ui.file(message="connect failed: postgresql://etl:hunter2@db/x password=hunter2")
    for path, query, marker in _pages(letter_id)[:3]:
        answer = ui.get(path, html=True, **query)
        page = answer.text
        assert answer.status_code == 200, (path, query, answer.status_code)
        assert marker in page and "connect failed: postgresql://etl:" in page, (path, query)
        assert "hunter2" not in page
        assert ui.tokens["admin"] not in page


# Secrets of the families redact() learned in issue 19, as a row filed before (or by another writer) holds them.
RAW_SECRETS = {
    "message": "POST https://hooks.slack.com/services/T0AAA/B0BBB/Xx9SlackHookSecret -> 500; "
    "postgresql://etl:Pa55/w0rd@db/x Cookie: sid=C00kieValue",
    "reason": "[attempt 1/3] dead letter poison/not-found: sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "payload_ref": "https://b.s3.amazonaws.com/k?X-Amz-Signature=AmzSigSecret0123",
}
LEAKED = ("Xx9SlackHookSecret", "Pa55", "w0rd", "C00kieValue", "4eC39HqLyjWDarjtT1zdp7dc", "AmzSigSecret0123")


def test_no_secret_of_any_family_appears_on_a_page_in_the_json_api_or_an_export(ui: Ui):
    """A secret filed in a letter is hidden on every page, in every JSON answer and in both exports."""
    (letter_id,) = ui.file(**RAW_SECRETS)
    ui.sql("UPDATE retry_dead_letters SET status_reason = %(r)s", {"r": "parked: token=Tok3nSecretValue"})
    answers = {
        path: ui.get(path, html=html).text
        for path, html in [
            ("/", True),
            (f"/letters/{letter_id}", True),
            ("/?view=groups", True),
            ("/api/letters", False),
            ("/api/groups", False),
            (f"/api/letters/{letter_id}", False),
            ("/api/export.csv", False),
            ("/api/export.json", False),
        ]
    }
    for path, text in answers.items():
        # a status reason written around the store (raw SQL) is redacted on the pages, which show it;
        # the JSON API and exports return letters as stored: the store redacts each field when it writes it
        page = not path.startswith("/api/")
        for secret in (*LEAKED, "Tok3nSecretValue") if page else LEAKED:
            assert secret not in text, (path, secret)
    assert "postgresql://etl:***@db/x" in answers[f"/api/letters/{letter_id}"]


def test_the_csv_export_neutralises_every_cell_that_would_start_a_formula(ui: Ui):
    """Opened with the csv module, no cell of the export starts with =, +, -, @, tab or CR: each has a ' first."""
    starts = ("=", "+", "-", "@", "\t", "\r")
    for start in starts:
        ui.file(
            run_id=f"{start}run",
            message=f'{start}HYPERLINK("http://evil.example")',
            workspace_id=f"{start}ws",
            exception_type=f"{start}cmd|' /C calc'!A0",
        )
    rows = list(csv.reader(io.StringIO(ui.get("/api/export.csv").text, newline="")))
    header, body = rows[0], rows[1:]
    assert len(body) == len(starts)
    for row in body:
        for name, cell in zip(header, row, strict=True):
            assert not cell.startswith(starts), (name, cell)
    for name in ("run_id", "message", "workspace_id", "exception_type"):
        column = header.index(name)
        assert sorted(row[column][1] for row in body) == sorted(starts), name
        assert all(row[column].startswith("'") for row in body), name


def test_the_detail_page_shows_identity_links_interval_error_rule_and_history(ui: Ui):
    """Detail: identity, Airflow links to the instance and its log, interval, category, rule, payload ref."""
    (letter_id,) = ui.file(map_index=4)
    page = ui.get(f"/letters/{letter_id}", html=True).text
    run = BASE.run_id + "-0"
    ti = f"/dags/{DAG_A}/runs/{run.replace(':', '%3A').replace('+', '%2B')}/tasks/load/mapped/4"
    assert f'href="{ti}"' in page and f'href="{ti}?try_number=1"' in page
    words = text_of(page)
    for expected in (
        "not-found",
        "http-404",
        "s3://bucket/jobs/7.json",
        "ws-1/2026-11-29",
        "Never replayed",
        "HTTPError",
    ):
        assert expected in words, expected
    assert "2026-11-28 21:00:00" in words  # the data interval start in America/Sao_Paulo


def test_times_show_in_sao_paulo_with_utc_on_hover(ui: Ui):
    """Times render in America/Sao_Paulo by default, with the ISO UTC instant in the title attribute."""
    (letter_id,) = ui.file()
    ui.sql(
        "UPDATE retry_dead_letters SET created_at = '2026-11-30T12:00:00Z' WHERE id = %(id)s",
        {"id": letter_id},
    )
    page = ui.get("/", html=True).text
    assert (
        '<time datetime="2026-11-30T12:00:00+00:00" title="2026-11-30T12:00:00Z UTC">2026-11-30 09:00:00</time>'
        in page
    )


def test_the_ui_timezone_is_configurable(ui: Ui, monkeypatch: pytest.MonkeyPatch):
    """``AIRFLOW__RETRY_PROVIDER__UI_TIMEZONE`` changes the displayed zone; an unknown zone is a clear error."""
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__UI_TIMEZONE", "Asia/Tokyo")
    (letter_id,) = ui.file()
    ui.sql(
        "UPDATE retry_dead_letters SET created_at = '2026-11-30T12:00:00Z' WHERE id = %(id)s",
        {"id": letter_id},
    )
    app = create_app(db=ui.store.db, driver=False)
    _mount_auth(app)
    page = TestClient(app).get("/", headers=ui.headers("admin")).text
    assert ">2026-11-30 21:00:00</time>" in page and "Asia/Tokyo" in page
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__UI_TIMEZONE", "Mars/Olympus")
    with pytest.raises(ValueError, match="AIRFLOW__RETRY_PROVIDER__UI_TIMEZONE"):
        create_app(db=ui.store.db, driver=False)


def test_the_grouped_view_counts_letters_per_root_cause(ui: Ui):
    """47 letters of one fingerprint show as "47 letters, 1 root cause", the biggest group first."""
    ui.file(47, fingerprint="fp-timeout", exception_type="TimeoutError", run_id="t")
    ui.file(2, fingerprint="fp-404", run_id="n")
    words = text_of(ui.get("/", html=True, view="groups").text)
    assert "49 letters, 2 root causes" in words
    assert words.index("47 letters, 1 root cause") < words.index("2 letters, 1 root cause")
    only = text_of(ui.get("/", html=True, view="groups", fingerprint="fp-timeout").text)
    assert "47 letters, 1 root cause" in only
    page = ui.get("/api/groups", limit=1).json()
    assert [g["letters"] for g in page["groups"]] == [47] and page["next"] == {
        "after_letters": 47,
        "after_fingerprint": "fp-timeout",
    }
    following = ui.get("/api/groups", limit=1, **page["next"]).json()
    assert [g["fingerprint"] for g in following["groups"]] == ["fp-404"]


def test_the_list_pages_by_keyset_newest_first(ui: Ui):
    """120 letters come in pages of 50, 50, 20, newest first, none twice; the page's link follows the keyset."""
    ids = ui.file(120, run_id="p")
    seen: list[int] = []
    params: dict[str, Any] = {}
    while True:
        answer = ui.get("/api/letters", **params).json()
        seen += [letter["id"] for letter in answer["letters"]]
        if answer["next"] is None:
            break
        params = answer["next"]
    assert seen == sorted(ids, reverse=True)
    page = ui.get("/", html=True).text
    link = re.search(r'href="/?\?(before_created=[^"]+)" id="next-page"', page.replace("&amp;", "&"))
    assert link is not None
    second = ui.client.get("/?" + link.group(1), headers=ui.headers("admin")).text
    assert f'data-letter="{ids[69]}"' in second and f'data-letter="{ids[70]}"' not in second


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"task_id": "extract"}, "extract"),  # by task
        ({"category": "timeout"}, "timeout"),  # by category
        ({"failure_class": "retryable"}, "timeout"),  # by failure class
        ({"failure_class": "infra"}, "infra"),  # the class no exception explains (issue 57)
        ({"workspace_id": "ws-9"}, "ws9"),  # by workspace
        ({"fingerprint": "fp-ws9"}, "ws9"),  # by fingerprint
        ({"status": "parked"}, "parked"),  # by status
        ({"dag_id": DAG_FREE}, "free"),  # by DAG
        (
            {"since": "2026-11-01", "until": "2026-11-01"},
            "old",
        ),  # a day, in the UI's zone, both ends inclusive
    ],
)
def test_filters_select_the_matching_letters(ui: Ui, params: dict[str, str], expected: str):
    """Each filter narrows the list (and the page) to exactly its letters."""
    made = {
        "base": ui.file(2, run_id="base"),
        "extract": ui.file(task_id="extract", run_id="e"),
        "timeout": ui.file(category="timeout", failure_class="retryable", run_id="t"),
        "infra": ui.file(category="killed", failure_class="infra", run_id="i"),
        "ws9": ui.file(workspace_id="ws-9", fingerprint="fp-ws9", run_id="w"),
        "parked": ui.file(run_id="pk"),
        "free": ui.file(dag_id=DAG_FREE, run_id="f"),
        "old": ui.file(run_id="o"),
    }
    ui.post("/api/park", {"ids": made["parked"]})
    ui.sql(
        "UPDATE retry_dead_letters SET created_at = '2026-11-01T12:00:00-03:00' WHERE id = %(id)s",
        {"id": made["old"][0]},
    )
    ui.sql(
        "UPDATE retry_dead_letters SET created_at = '2026-11-02T02:00:00Z' WHERE id = %(id)s",  # 23:00 on the 1st in UTC-3
        {"id": made["base"][0]},
    )
    expected_ids = made[expected] + (made["base"][:1] if expected == "old" else [])
    found = [letter["id"] for letter in ui.get("/api/letters", **params).json()["letters"]]
    assert sorted(found) == sorted(expected_ids)
    page = ui.get("/", html=True, **params).text
    assert sorted(int(i) for i in re.findall(r'data-letter="(\d+)"', page)) == sorted(expected_ids)


def test_the_filter_form_has_a_control_for_each_declared_filter_keeping_its_value(ui: Ui):
    """The page's form is the declaration (dlq/filters.py): each filter's control, its choices, the value asked."""
    from airflow_retry_provider.plugin.models import PAGE_FILTERS

    ui.file(run_id="f")
    page = ui.get("/", html=True, status="parked", category="timeout", newer_version="yes").text
    form = page[page.index('<form class="filters"') : page.index("</form>")]
    assert re.findall(r'name="(\w+)"', form) == ["view", *(field.name for field in PAGE_FILTERS)]
    for field in PAGE_FILTERS:
        assert f">{field.label}" in form or f"> {field.label}" in form, field.label
    status = form[form.index('<select name="status">') :]
    assert '<option value="parked" selected>parked</option>' in status
    assert f'<option value="{DAG_A}" >{DAG_A}</option>' in form  # the DAGs the user may read
    assert 'name="category" value="timeout"' in form and 'type="date" name="since" value=""' in form
    assert 'id="newer-version" checked' in form


def test_export_gives_the_filtered_set_as_csv_and_json(ui: Ui):
    """Exports hold every letter of the filter, with a header row (CSV) or as an array (JSON)."""
    ui.file(3, task_id="extract", run_id="x")
    ui.file(2, run_id="y")
    answer = ui.get("/api/export.csv", task_id="extract")
    assert answer.headers["content-disposition"].startswith("attachment")
    rows = list(csv.DictReader(io.StringIO(answer.text)))
    assert len(rows) == 3 and {row["task_id"] for row in rows} == {"extract"}
    assert rows[0]["payload_ref"] == "s3://bucket/jobs/7.json"
    assert len(ui.get("/api/export.json").json()["letters"]) == 5


def test_the_task_instance_tab_shows_its_letter_and_retry_history(ui: Ui):
    """The tab shows that instance's letter and replays; tries come from Airflow's API (unreachable here)."""
    (letter_id,) = ui.file()
    params = {"dag_id": DAG_A, "run_id": BASE.run_id + "-0", "task_id": "load", "map_index": "{MAP_INDEX}"}
    page = ui.get("/ti", html=True, **params).text
    assert f'href="/letters/{letter_id}"' in page and "API did not give the tries" in page
    assert "not exposed by its REST API in 3.3" in text_of(page)
    data = ui.get("/api/task-instance", **{**params, "map_index": -1}).json()
    assert data["letter"]["id"] == letter_id and data["tries"] == [] and data["tries_error"]
    none = ui.get("/ti", html=True, **{**params, "run_id": "other"}).text
    assert "This task instance has no dead letter." in none


def test_the_openapi_schema_documents_the_json_api(ui: Ui):
    """The JSON API is described by its OpenAPI schema under the same prefix."""
    schema = ui.get("/openapi.json").json()
    assert {
        "/api/letters",
        "/api/groups",
        "/api/preview",
        "/api/replays",
        "/api/park",
        "/api/dismiss",
    } <= set(schema["paths"])
    assert "post" in schema["paths"]["/api/replays"] and "get" not in schema["paths"]["/api/replays"]
    assert "fix_version" in json.dumps(schema["components"])


def test_a_task_process_loading_the_plugins_does_not_build_the_app():
    """The task runner loads every plugin at its start (for their listeners); ours is found there, and its
    app (FastAPI's routes, Airflow's API security, the pages: about 0.7 CPU-s) is not built in a task."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from airflow.sdk.listener import get_listener_manager\n"
        "from airflow.sdk import plugins_manager\n"
        "get_listener_manager()\n"
        "plugins, _ = plugins_manager._get_plugins()\n"
        "print(sorted(p.name for p in plugins))\n"
        "print(sorted(m for m in ('airflow_retry_provider.plugin', 'airflow_retry_provider.plugin.app',\n"
        "    'airflow.api_fastapi.core_api.security', 'fastapi') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    loaded, imported = out.stdout.strip().splitlines()[-2:]
    assert "'retry_provider'" in loaded
    assert imported == "['airflow_retry_provider.plugin']"


def test_the_plugin_mounts_the_app_and_adds_the_nav_entry_and_the_task_instance_tab():
    """The plugin, as Airflow loads it from the entry point: one app under /retry-provider, a Browse entry, a TI tab."""
    from airflow import plugins_manager

    plugins, _ = plugins_manager._get_plugins()
    (plugin,) = [p for p in plugins if p.name == "retry_provider"]
    (app,) = plugin.fastapi_apps
    assert (app["url_prefix"], app["name"]) == ("/retry-provider", "Dead letters")
    views = {view["name"]: view for view in plugin.external_views if view["destination"] == "nav"}
    tab, retries = [view for view in plugin.external_views if view["destination"] == "task_instance"]
    assert (tab["name"], retries["name"]) == ("Dead letters", "Retries")
    assert retries["href"].startswith(
        "/retry-provider/tries?dag_id={DAG_ID}&run_id={RUN_ID}&task_id={TASK_ID}"
    )
    assert list(views) == ["Dead letters", "Medallion gaps", "Connector health", "Dependencies", "Deliveries"]
    assert views["Dependencies"]["href"] == "/retry-provider/dependencies"
    nav = views["Dead letters"]
    assert (nav["category"], nav["href"]) == ("browse", "/retry-provider/")
    assert (views["Medallion gaps"]["category"], views["Medallion gaps"]["href"]) == (
        "browse",
        "/retry-provider/medallion-gaps",
    )
    assert (views["Connector health"]["category"], views["Connector health"]["href"]) == (
        "browse",
        "/retry-provider/connector-health",
    )
    assert nav["url_route"] and tab["url_route"] and tab["destination"] == "task_instance"
    assert "{DAG_ID}" in tab["href"] and "{RUN_ID}" in tab["href"] and "{TASK_ID}" in tab["href"]


# -- hardening (issue 19) -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        # an unknown key is refused, not ignored (a body cannot smuggle a dag_id or an actor)
        ("/api/park", {"ids": [1], "dag_id": "other_dag"}, "dag_id"),
        ("/api/preview", {"ids": [1], "filter": {"owner": "x"}}, "owner"),
        # lengths: reason 500, versions 200
        ("/api/dismiss", {"ids": [1], "reason": "x" * 501}, "reason"),
        ("/api/replays", {"ids": [1], "reason": "r", "fix_version": "v" * 201}, "fix_version"),
        (
            "/api/replays",
            {"ids": [1], "reason": "r", "fix_version": "v", "processing_version": "p" * 201},
            "processing_version",
        ),
        # at most 1,000 ids, each within int64
        ("/api/park", {"ids": list(range(1, 1002))}, "ids"),
        ("/api/park", {"ids": [2**63]}, "ids"),
        ("/api/park", {"ids": [0]}, "ids"),
    ],
)
def test_a_bad_body_is_a_422_naming_the_field(ui: Ui, path: str, body: dict[str, Any], field: str):
    """Unknown keys, overlong texts, too many ids and ids outside int64 answer 422 with the field's path."""
    answer = ui.post(path, body, user="admin")
    assert answer.status_code == 422, answer.text
    assert any(field in map(str, error["loc"]) for error in answer.json()["detail"]), answer.text


@pytest.mark.parametrize(
    "params",
    [
        {"until": "9999-12-31"},  # the day after is past datetime's range
        {"since": "0001-01-01T00:00:00+05:00"},  # before year 1 in UTC
        {"until": "9999-12-31T23:00:00-05:00"},  # after year 9999 in UTC
    ],
)
@pytest.mark.parametrize("path", ["/api/letters", "/api/groups", "/api/export.csv"])
def test_dates_outside_the_supported_range_are_400(ui: Ui, params: dict[str, str], path: str):
    """An out-of-range date is the caller's mistake: 400 naming the date, never a 500."""
    answer = ui.get(path, **params)
    assert answer.status_code == 400, answer.text
    assert "bad date" in answer.json()["detail"]


def test_an_overlong_filter_in_the_query_is_a_422(ui: Ui):
    """A query filter longer than allowed is a 422 naming it, like a body field."""
    answer = ui.get("/api/letters", dag_id="d" * 501)
    assert answer.status_code == 422
    assert ["query", "dag_id"] in [error["loc"] for error in answer.json()["detail"]]


def test_the_audit_log_has_one_row_per_dag_touched_never_the_bodys_dag(ui: Ui):
    """A park of letters of two DAGs writes two rows, each with its own letter ids, and never the body's dag_id."""
    a_ids = ui.file(2, dag_id=DAG_A, run_id="audit-a")
    free_ids = ui.file(1, dag_id=DAG_FREE, run_id="audit-free")
    smuggled = ui.post("/api/park", {"ids": a_ids, "reason": "r", "dag_id": "other_dag"}, user="admin")
    assert smuggled.status_code == 422  # the body cannot name a DAG
    answer = ui.post("/api/park", {"ids": a_ids + free_ids, "reason": "batch"}, user="admin")
    assert answer.status_code == 200, answer.text
    rows = [
        (dag_id, json.loads(extra))
        for owner, dag_id, extra in audit_entries("retry_provider_park")
        if owner == "admin" and "batch" in extra
    ]
    assert sorted((dag_id, extra["letter_ids"]) for dag_id, extra in rows) == sorted(
        [(DAG_A, sorted(a_ids)), (DAG_FREE, free_ids)]
    )
    assert all(extra["outcome"] == "parked" for _, extra in rows)
    assert not [row for row in audit_entries("retry_provider_park") if row[1] == "other_dag"]


def test_a_refused_action_is_audited_too(ui: Ui):
    """A 403 on dismiss still writes an audit row: who tried, on which DAG, which letters, refused."""
    (letter_id,) = ui.file(dag_id=DAG_A, run_id="refused")
    answer = ui.post("/api/dismiss", {"ids": [letter_id], "reason": "sneaky dismissal"}, user="viewer_a")
    assert answer.status_code == 403
    rows = [
        (owner, dag_id, json.loads(extra))
        for owner, dag_id, extra in audit_entries("retry_provider_dismiss")
        if "sneaky dismissal" in extra
    ]
    assert [(owner, dag_id, extra["letter_ids"], extra["outcome"]) for owner, dag_id, extra in rows] == [
        ("viewer_a", DAG_A, [letter_id], "refused")
    ]


@pytest.mark.parametrize("path", ["/docs", "/openapi.json"])
def test_the_api_docs_need_a_signed_in_user_and_load_nothing_from_outside(ui: Ui, path: str):
    """The schema and its page are 401 without a token; the page references no other origin."""
    assert ui.get(path, user=None).status_code == 401
    answer = ui.get(path, user="viewer")
    assert answer.status_code == 200
    if path == "/docs":
        assert "/api/replays" in answer.text
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", answer.text), "an outside asset"


@pytest.mark.parametrize("path", ["/", "/api/letters", "/docs", "/medallion-gaps"])
def test_every_answer_sends_the_security_headers(ui: Ui, path: str):
    """nosniff, SAMEORIGIN framing, and a CSP of the own origin whose nonce is the one on the page's scripts."""
    answer = ui.get(path, html=not path.startswith("/api"))
    assert answer.status_code == 200, answer.text
    assert answer.headers["X-Content-Type-Options"] == "nosniff"
    assert answer.headers["X-Frame-Options"] == "SAMEORIGIN"
    csp = answer.headers["Content-Security-Policy"]
    assert "default-src 'self'" in csp and "frame-ancestors 'self'" in csp and "*" not in csp
    nonce = re.search(r"'nonce-([^']+)'", csp)
    assert nonce
    scripts = re.findall(r"<script([^>]*)>", answer.text)
    assert all(f'nonce="{nonce.group(1)}"' in attrs for attrs in scripts)
    assert " on" + "change=" not in answer.text and " on" + "click=" not in answer.text  # inline handlers


def test_airflows_api_is_called_at_the_configured_url_else_loopback_never_the_host_header(
    monkeypatch: pytest.MonkeyPatch,
):
    """A request with ``Host: attacker.example`` still calls [api] base_url, or 127.0.0.1 on [api] port."""
    from starlette.requests import Request

    from airflow_retry_provider.plugin.access import default_api

    request = Request(
        {
            "type": "http",
            "method": "GET",
            "path": "/retry-provider/api/preview",
            "root_path": "",
            "scheme": "http",
            "query_string": b"",
            "headers": [(b"host", b"attacker.example")],
            "server": ("attacker.example", 80),
        }
    )
    monkeypatch.delenv("AIRFLOW__API__BASE_URL", raising=False)
    monkeypatch.setenv("AIRFLOW__API__PORT", "8123")
    assert default_api(request, "token").credentials.base_url == "http://127.0.0.1:8123"
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", "https://airflow.example.org/")
    assert default_api(request, "token").credentials.base_url == "https://airflow.example.org"


def test_the_grouped_views_sample_obeys_the_groups_filters(ui: Ui):
    """Filtered to workspace ws-1, a root cause shared with ws-2 shows a ws-1 letter as its sample."""
    (mine,) = ui.file(workspace_id="ws-1", fingerprint="fp-shared", message="ws-1 failure", run_id="s1")
    ui.file(workspace_id="ws-2", fingerprint="fp-shared", message="ws-2 failure", run_id="s2")  # newer
    (group,) = ui.get("/api/groups", workspace_id="ws-1").json()["groups"]
    assert (group["sample_id"], group["letters"]) == (mine, 1)
    assert "ws-2 failure" not in ui.get("/", html=True, view="groups", workspace_id="ws-1").text


def test_sixteen_threads_claiming_the_same_letters_each_win_once(
    ui: Ui, pg_dsn, monkeypatch: pytest.MonkeyPatch
):
    """16 threads park the same 100 letters through an app on the pooled database: each letter changes once, no error."""
    from concurrent.futures import ThreadPoolExecutor

    ids = ui.file(100, run_id="claim")
    monkeypatch.setenv("AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT", pg_dsn)
    app = create_app()  # the database of production: built from the connection, on a pool
    _mount_auth(app)
    headers = ui.headers("admin")
    with TestClient(app) as client:

        def claim(_: int) -> list[int]:
            answer = client.post("/api/park", headers=headers, json={"ids": ids, "reason": "mine"})
            assert answer.status_code in (200, 404), answer.text
            return list(answer.json().get("changed", []))

        with ThreadPoolExecutor(16) as pool:
            won = [letter_id for changed in pool.map(claim, range(16)) for letter_id in changed]
        app.state.driver_thread.stop()  # its replay driver thread must not outlive the test (it would poll in later dag.test() runs)
        app.state.db.close()
    assert sorted(won) == sorted(ids)
    assert {ui.store.get(i).status for i in ids} == {"parked"}  # type: ignore[union-attr]


def test_the_letter_page_the_json_api_and_the_cli_show_the_impact(ui: Ui, pg_dsn, capsys):
    """What a letter blocks and its delivery's latest replay time: on the page, in the JSON API and in dlq show."""
    from datetime import timedelta

    from airflow_retry_provider.cli import main
    from airflow_retry_provider.policy.impact import TaskFacts, assess_impact

    (letter_id,) = ui.file(dag_id=DAG_A)
    assert ui.get(f"/api/letters/{letter_id}", user="admin").json()["impact"] is None
    assert "Not computed yet" in ui.get(f"/letters/{letter_id}", user="admin", html=True).text
    deadline = datetime(2026, 12, 4, 9, 0, tzinfo=timezone.utc)
    tasks = [
        TaskFacts(DAG_A, "load", downstream=("publish",), expected_duration=timedelta(minutes=20)),
        TaskFacts(
            DAG_A, "publish", expected_duration=timedelta(minutes=5), deadline=deadline, workspace="acme"
        ),
    ]
    now = datetime(2026, 12, 4, 3, 0, tzinfo=timezone.utc)
    ui.store.set_impact(letter_id, assess_impact((DAG_A, "load"), tasks, {}, now=now))

    impact = ui.get(f"/api/letters/{letter_id}", user="admin").json()["impact"]
    assert impact["blocked_tasks"] == {"count": 1, "first": [f"{DAG_A}.publish"]}
    assert impact["deliveries"][0]["latest_replay"] == "2026-12-04T08:35:00+00:00"
    page = ui.get(f"/letters/{letter_id}", user="admin", html=True).text
    assert f"{DAG_A}.publish" in page and "acme" in page and "delivery-at-risk" in page
    assert main(["dlq", "show", "--id", str(letter_id), "--dsn", pg_dsn]) == 0
    out = capsys.readouterr().out
    assert (
        f"impact: replay by 2026-12-04 08:35 UTC to meet the 2026-12-04 09:00 UTC delivery of {DAG_A}.publish"
        in out
    )
