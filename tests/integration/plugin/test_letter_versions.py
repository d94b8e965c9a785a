"""The DAG version a letter failed on, on every surface: page, JSON API, exports, groups, CLI (issue 29 item 1)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from airflow_retry_provider.cli import main
from tests.integration.plugin.test_app import BASE, Ui, airflow_auth, text_of, ui  # noqa: F401 - the app's fixtures, reused

UUID3 = "0195f3c2-0000-7000-8000-000000000003"
UUID_GONE = "0195f3c2-0000-7000-8000-0000000000ff"


@pytest.fixture
def app(ui: Ui) -> Ui:  # noqa: F811 - the app of test_app.py on a fresh provider database
    """The plugin's app with test_app.py's users, on a fresh provider database."""
    return ui


def test_every_surface_shows_the_version_a_letter_failed_on(app: Ui):
    """v3 with its bundle on the page, the JSON API and both exports; a letter without a number says so."""
    (known,) = app.file(
        run_id="v3",
        dag_version_id=UUID3,
        dag_version_number=3,
        bundle_name="repo",
        bundle_version="9f8e7d6c5b4a",
    )
    (gone,) = app.file(run_id="gone", dag_version_id=UUID_GONE)  # a version Airflow no longer has
    assert "DAG version v3 (bundle repo@9f8e7d6c5b4a)" in text_of(
        app.get(f"/letters/{known}", html=True).text
    )
    assert "DAG version version 0195f3c2 (number unknown)" in text_of(
        app.get(f"/letters/{gone}", html=True).text
    )
    answer = app.get(f"/api/letters/{known}").json()
    letter = answer.get("letter", answer)
    assert (letter["dag_version_id"], letter["dag_version_number"], letter["bundle_version"]) == (
        UUID3,
        3,
        "9f8e7d6c5b4a",
    )
    rows = {row["id"]: row for row in csv.DictReader(io.StringIO(app.get("/api/export.csv").text))}
    assert rows[str(known)]["dag_version_number"] == "3" and rows[str(gone)]["dag_version_number"] == ""
    exported = {item["id"]: item for item in json.loads(app.get("/api/export.json").text)["letters"]}
    assert exported[known]["bundle_name"] == "repo" and exported[gone]["dag_version_number"] is None


def test_a_root_cause_group_shows_the_versions_its_letters_failed_on(app: Ui):
    """One fingerprint failing on v3 and v5, and once without a version: "failed on v3, v5 + 1 unknown"."""
    app.file(2, run_id="a", fingerprint="fp-v", dag_version_number=3)
    app.file(1, run_id="b", fingerprint="fp-v", dag_version_number=5)
    app.file(1, run_id="c", fingerprint="fp-v")
    assert "failed on v3, v5 + 1 unknown" in text_of(app.get("/", html=True, view="groups").text)
    (group,) = app.get("/api/groups").json()["groups"]
    assert (group["versions"], group["unknown_versions"]) == ([3, 5], 1)


def test_the_cli_lists_and_shows_the_version(app: Ui, capsys):
    """``dlq list`` ends each row with the version (``v?`` when unknown); ``dlq show`` says it in words."""
    (known,) = app.file(run_id="cli", dag_version_number=7, dag_version_id=UUID3)
    (unknown,) = app.file(run_id="cli-unknown")
    assert main(["dlq", "list", "--dsn", app.dsn]) == 0
    rows = {line.split()[0]: line.split()[-1] for line in capsys.readouterr().out.splitlines()}
    assert (rows[str(known)], rows[str(unknown)]) == ("v7", "v?")
    assert main(["dlq", "show", "--id", str(known), "--dsn", app.dsn]) == 0
    assert "ran version: v7" in capsys.readouterr().out


def _deployed(app: Ui, dag_id: str, number: int) -> None:
    """What the sweeper records when it sees ``number`` as the newest version of ``dag_id``."""
    app.sql(
        "INSERT INTO retry_dag_versions (dag_id, version_number, version_id, deployed_at)"
        " VALUES (%(dag)s, %(n)s, %(id)s, '2026-12-02T17:02:00Z')",
        {"dag": dag_id, "n": number, "id": UUID3},
    )


def test_a_group_says_a_newer_version_is_deployed_and_links_its_preview(app: Ui):
    """Letters failed on v3, v5 is deployed: the group says so, with its time and the replay preview of the group."""
    app.file(2, run_id="old", fingerprint="fp-fix", dag_version_number=3)
    _deployed(app, BASE.dag_id, 5)
    page = app.get("/", html=True, view="groups").text
    assert "failed on v3 v5 deployed at 2026-12-02 14:02:00" in text_of(page)  # São Paulo time
    assert "/preview?all_matching=true&amp;status=dlq&amp;dag_id=ui_dag_team_a&amp;fingerprint=fp-fix" in page
    (group,) = app.get("/api/groups").json()["groups"]
    assert (group["deployed_version"], group["versions"]) == (5, [3])


def test_the_list_filters_letters_whose_dag_has_a_newer_version(app: Ui):
    """ "a newer version is deployed": letters on older versions only; current and unknown versions never match."""
    (old,) = app.file(run_id="old", dag_version_number=3)
    app.file(run_id="current", dag_version_number=5)
    app.file(run_id="unknown")
    _deployed(app, BASE.dag_id, 5)
    listed = app.get("/api/letters", newer_version="yes").json()["letters"]
    assert [letter["id"] for letter in listed] == [old]
    assert len(app.get("/api/letters").json()["letters"]) == 3
    assert 'id="newer-version" checked' in app.get("/", html=True, newer_version="yes").text
    bad = app.get("/api/letters", newer_version="maybe")
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["query", "newer_version"]
