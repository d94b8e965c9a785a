"""``airflow-retry dlq ...`` on a real PostgreSQL: every action, exit codes 0/1/2, one-line errors, --json.

Clears against a live Airflow are in tests/e2e/test_dlq_replay.py; here Airflow's API is a closed port.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace

import pytest

from airflow_retry_provider.cli import main
from airflow_retry_provider.devstack.postgres import free_port
from airflow_retry_provider.dlq.store import DeadLetterStore
from tests.conftest import VENV_BIN
from tests.factories import new_letter

LETTER = new_letter()


@pytest.fixture
def letters(pg_dsn, monkeypatch) -> list[int]:
    """Two letters (etl/load, etl/other) and no API connection in the environment."""
    monkeypatch.delenv("AIRFLOW_CONN_RETRY_PROVIDER_AIRFLOW_API", raising=False)
    store = DeadLetterStore.from_dsn(pg_dsn)
    return [store.file(replace(LETTER, task_id=t), replay_cap=3).letter_id for t in ("load", "other")]


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _closed_api() -> list[str]:
    return ["--api-url", f"http://127.0.0.1:{free_port()}", "--api-user", "admin", "--api-password", "pw"]


def test_list_prints_letters_and_json(pg_dsn, letters, capsys):
    """list shows every letter newest first; --json returns them with a count; filters narrow it."""
    code, out, _ = _run(capsys, "dlq", "list", "--dsn", pg_dsn)
    assert code == 0 and len(out.splitlines()) == 2 and "etl/other" in out.splitlines()[0]
    code, out, _ = _run(capsys, "dlq", "list", "--dsn", pg_dsn, "--task", "load", "--status", "dlq", "--json")
    document = json.loads(out)
    assert code == 0 and document["count"] == 1 and document["letters"][0]["id"] == letters[0]
    code, out, _ = _run(capsys, "dlq", "list", "--dsn", pg_dsn, "--limit", "1", "--after", str(letters[1]))
    assert code == 0 and out.split()[0] == str(letters[0])


def test_list_with_no_match_exits_1(pg_dsn, letters, capsys):
    """A filter that matches nothing is exit code 1, not an error."""
    code, out, _ = _run(capsys, "dlq", "list", "--dsn", pg_dsn, "--dag", "nope", "--json")
    assert code == 1 and json.loads(out)["count"] == 0


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["list", "--status", "lost"], "--status: 'lost'"),  # not a status
        (["list", "--since", "2026-11-01T00:00:00"], "--since: '2026-11-01T00:00:00'"),  # no offset
        (["list", "--until", "yesterday"], "--until: 'yesterday'"),  # not ISO 8601
        (["list", "--since", "2026-11-02T00:00Z", "--until", "2026-11-01T00:00Z"], "--until:"),  # inverted
        (["list", "--limit", "0"], "--limit: '0'"),  # not positive
        (["list", "--id", "abc"], "--id: 'abc'"),  # not an id
        (["list", "--dag", ""], "--dag: ''"),  # empty
        (["show", "--id", "-3"], "--id: '-3'"),  # negative
        (["replay", "--id", "1", "--reason", "r", "--fix-version", "v"], "--actor: missing"),
        (["replay", "--id", "1", "--actor", "a", "--fix-version", "v"], "--reason: missing"),
        (["replay", "--id", "1", "--actor", "a", "--reason", "r"], "--fix-version: missing"),
        (
            ["replay", "--actor", "a", "--reason", "r", "--fix-version", "v"],
            "--id: replay needs",
        ),  # no selection
        (
            ["replay", "--id", "1", "--actor", "a", "--reason", "r", "--fix-version", "v", "--rate", "0"],
            "--rate",
        ),
        (["preview", "--id", "1", "--rate", "x"], "--rate: 'x'"),
        (["park", "--id", "1"], "--actor: missing"),
        (["park", "--actor", "a"], "--id: park needs"),
        (["dismiss", "--id", "1", "--actor", "a"], "--reason: missing"),
        (["purge"], "--closed-before: missing"),
        (["purge", "--closed-before", "2026-13-01T00:00Z"], "--closed-before: '2026-13-01T00:00Z'"),
    ],
)
def test_bad_input_exits_2_with_one_line_naming_the_flag(pg_dsn, letters, capsys, argv, flag):
    """Bad input is exit code 2 and one line on stderr that names the flag and the value."""
    code, out, err = _run(capsys, "dlq", *argv, "--dsn", pg_dsn)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and flag in err, err


def test_a_dsn_that_is_not_postgresql_exits_2(letters, capsys):
    """--dsn must be a postgresql:// URI; the error does not echo credentials."""
    code, _, err = _run(capsys, "dlq", "list", "--dsn", "mysql://u:secretpw@h/db")
    assert code == 2 and err.startswith("airflow-retry: --dsn:") and "secretpw" not in err


def test_show_prints_a_letter_and_its_replays(pg_dsn, letters, capsys):
    """show --json has the letter's fields and its replays; an unknown id is exit 1."""
    code, out, _ = _run(capsys, "dlq", "show", "--id", str(letters[0]), "--dsn", pg_dsn, "--json")
    (shown,) = json.loads(out)["letters"]
    assert code == 0 and shown["id"] == letters[0] and shown["replays"] == [] and shown["status"] == "dlq"
    code, out, _ = _run(capsys, "dlq", "show", "--id", str(letters[0]), "--dsn", pg_dsn)
    assert code == 0 and "fingerprint: 0123456789abcdef" in out
    assert _run(capsys, "dlq", "show", "--id", "999999", "--dsn", pg_dsn)[0] == 1


def test_preview_and_replay_with_nothing_matched_exit_1(pg_dsn, letters, capsys):
    """With no matching letter neither action needs Airflow: exit 1."""
    assert _run(capsys, "dlq", "preview", "--dag", "nope", "--dsn", pg_dsn)[0] == 1
    argv = ["--dag", "nope", "--actor", "a", "--reason", "r", "--fix-version", "v", "--dsn", pg_dsn]
    assert _run(capsys, "dlq", "replay", *argv)[0] == 1


def test_preview_without_an_api_connection_exits_2(pg_dsn, letters, capsys):
    """Preview needs Airflow's API: without --api-url or the connection variable it names the flag."""
    code, _, err = _run(capsys, "dlq", "preview", "--id", str(letters[0]), "--dsn", pg_dsn)
    assert code == 2 and "--api-url: missing" in err and "AIRFLOW_CONN_RETRY_PROVIDER_AIRFLOW_API" in err


def test_preview_reports_the_dry_run_error_and_changes_nothing(pg_dsn, letters, capsys):
    """With Airflow unreachable the preview lists the letter with the error; no status or replay row changes."""
    code, out, _ = _run(
        capsys, "dlq", "preview", "--id", str(letters[0]), "--dsn", pg_dsn, *_closed_api(), "--json"
    )
    document = json.loads(out)
    assert code == 0 and document["count"] == 1 and "unreachable" in document["items"][0]["error"]
    assert document["rate_per_minute"] == 10 and document["seconds"] == 0
    store = DeadLetterStore.from_dsn(pg_dsn)
    assert store.get(letters[0]).status == "dlq" and store.replays(letters[0]) == []  # type: ignore[union-attr]


def test_replay_with_airflow_down_records_clear_failed_and_exits_1(pg_dsn, letters, capsys):
    """The claim is released, the replay is recorded as clear-failed, progress goes to stderr, exit 1."""
    argv = ["--id", str(letters[0]), "--actor", "ana", "--reason", "fixed", "--fix-version", "v2", "--json"]
    code, out, err = _run(capsys, "dlq", "replay", *argv, "--dsn", pg_dsn, *_closed_api())
    assert code == 1 and json.loads(out)["counts"] == {"clear-failed": 1}
    assert f"[1/1] letter {letters[0]}: clear-failed" in err and "pw" not in err.replace("unreachable", "")
    store = DeadLetterStore.from_dsn(pg_dsn)
    assert store.get(letters[0]).status == "dlq"  # type: ignore[union-attr]
    assert [r.outcome for r in store.replays(letters[0])] == ["clear-failed"]


def test_park_then_dismiss_then_purge(pg_dsn, letters, capsys):
    """park (0, then 1 when nothing changes), dismiss with a reason, and purge of closed letters."""
    park = ["dlq", "park", "--id", str(letters[0]), "--actor", "ana", "--reason", "vendor", "--dsn", pg_dsn]
    assert _run(capsys, *park)[0] == 0
    assert _run(capsys, *park)[0] == 1
    code, out, _ = _run(
        capsys,
        "dlq",
        "dismiss",
        "--dag",
        "etl",
        "--actor",
        "bia",
        "--reason",
        "obsolete",
        "--dsn",
        pg_dsn,
        "--json",
    )
    assert code == 0 and sorted(json.loads(out)["changed"]) == sorted(letters)
    assert _run(capsys, "dlq", "purge", "--closed-before", "2000-01-01T00:00:00Z", "--dsn", pg_dsn)[0] == 1
    code, out, _ = _run(
        capsys, "dlq", "purge", "--closed-before", "2999-01-01T00:00:00-03:00", "--dsn", pg_dsn, "--json"
    )
    assert code == 0 and sorted(json.loads(out)["deleted"]) == sorted(letters)
    assert _run(capsys, "dlq", "list", "--dsn", pg_dsn)[0] == 1


def test_console_script_reads_the_airflow_connection(letters, pg_dsn):
    """The installed ``airflow-retry`` finds the database through AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT."""
    import os

    env = {**os.environ, "AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT": pg_dsn}
    result = subprocess.run(
        [str(VENV_BIN / "airflow-retry"), "dlq", "list", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout)["count"] == 2
