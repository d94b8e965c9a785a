"""``airflow-retry dlq ...`` on a real PostgreSQL: every action, exit codes 0/1/2, one-line errors, --json.

Clears against a live Airflow are in tests/e2e/test_dlq_replay.py; here Airflow's API is a closed port.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import replace

import pytest

from airflow_retry_provider.cli import main
from airflow_retry_provider.dlq.store import DeadLetterStore
from devstack.postgres import free_port
from tests.conftest import VENV_BIN
from tests.factories import new_letter
from tests.local_airflow import refusing_airflow

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


@pytest.fixture
def refusing_api() -> Iterator[list[str]]:
    """The --api-* flags of a local server that signs in and then refuses every call with HTTP 409."""
    with refusing_airflow() as url:
        yield ["--api-url", url, "--api-user", "admin", "--api-password", "pw"]


def _unavailable(code: int, out: str, err: str) -> None:
    """Exit 3, nothing on stdout, one line saying Airflow's API did not answer, no password."""
    assert code == 3 and out == "", (code, out, err)
    (line,) = err.strip().splitlines()
    assert line.startswith("airflow-retry: Airflow's API unavailable:") and "unreachable" in line, line
    assert "pw" not in line.replace("unreachable", "")


def test_list_prints_letters_and_json(pg_dsn, letters, capsys):
    """list shows a header row then every letter newest first (--no-header: the rows only); --json returns
    them with a count; filters narrow it."""
    code, out, _ = _run(capsys, "dlq", "list", "--dsn", pg_dsn)
    header, *rows = out.splitlines()
    assert code == 0 and header.split()[:3] == ["id", "status", "replays"] and "dag version" in header
    assert len(rows) == 2 and "etl/other" in rows[0]
    code, out, _ = _run(capsys, "dlq", "list", "--dsn", pg_dsn, "--no-header")
    assert code == 0 and len(out.splitlines()) == 2 and "etl/other" in out.splitlines()[0]
    code, out, _ = _run(capsys, "dlq", "list", "--dsn", pg_dsn, "--task", "load", "--status", "dlq", "--json")
    document = json.loads(out)
    assert code == 0 and document["count"] == 1 and document["letters"][0]["id"] == letters[0]
    code, out, _ = _run(
        capsys, "dlq", "list", "--dsn", pg_dsn, "--limit", "1", "--after", str(letters[1]), "--no-header"
    )
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
        (["list", "--limit", "1e3"], "--limit: '1e3'"),  # not an integer
        (["list", "--limit", str(2**63)], f"--limit: '{2**63}' is too large"),  # past int64
        (["list", "--id", str(2**63)], f"--id: '{2**63}' is too large"),  # past int64
        (["list", "--after", "x"], "--after: 'x'"),  # not an id
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


@pytest.mark.parametrize(
    ("dsn", "said"),
    [
        ("mysql://u:secretpw@h/db", "the scheme 'mysql' is not postgresql"),  # another database
        (
            "sqlite:////tmp/secretpw.db",
            "the scheme 'sqlite' is not postgresql",
        ),  # Airflow's quick-start database
        (
            "mysql+mysqldb://u:secretpw@h/db",
            "the scheme 'mysql+mysqldb' is not postgresql",
        ),  # a SQLAlchemy URL
        ("u:secretpw@h:5432/db", "not a URI (no scheme://)"),  # the scheme forgotten
    ],
)
def test_a_dsn_that_is_not_postgresql_exits_2_naming_the_scheme_typed(letters, capsys, dsn, said):
    """--dsn must be a postgresql:// URI: the one line names the scheme typed and what is expected,
    and does not echo credentials."""
    code, out, err = _run(capsys, "dlq", "list", "--dsn", dsn)
    assert code == 2 and out == "" and err.startswith(f"airflow-retry: --dsn: {said}"), err
    assert "expected postgresql://" in err and "secretpw" not in err


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


def test_preview_with_airflow_down_is_exit_3_and_changes_nothing(pg_dsn, letters, capsys):
    """With Airflow unreachable the preview says so in one line (exit 3); no status or replay row changes."""
    code, out, err = _run(
        capsys, "dlq", "preview", "--id", str(letters[0]), "--dsn", pg_dsn, *_closed_api(), "--json"
    )
    _unavailable(code, out, err)
    store = DeadLetterStore.from_dsn(pg_dsn)
    assert store.get(letters[0]).status == "dlq" and store.replays(letters[0]) == []  # type: ignore[union-attr]


def test_preview_reports_the_dry_run_error_and_changes_nothing(pg_dsn, letters, capsys, refusing_api):
    """Airflow up but refusing the dry run: the preview lists the letter with the error; nothing changes."""
    code, out, _ = _run(
        capsys, "dlq", "preview", "--id", str(letters[0]), "--dsn", pg_dsn, *refusing_api, "--json"
    )
    document = json.loads(out)
    assert code == 0 and document["count"] == 1 and "409" in document["items"][0]["error"]
    assert document["rate_per_minute"] == 10 and document["seconds"] == 0
    store = DeadLetterStore.from_dsn(pg_dsn)
    assert store.get(letters[0]).status == "dlq" and store.replays(letters[0]) == []  # type: ignore[union-attr]


def test_replay_with_airflow_down_is_exit_3_and_claims_nothing(pg_dsn, letters, capsys):
    """Nothing answering at the API's address: exit 3 before any claim; no replay row, no job, letter in dlq."""
    argv = ["--id", str(letters[0]), "--actor", "ana", "--reason", "fixed", "--fix-version", "v2", "--json"]
    code, out, err = _run(capsys, "dlq", "replay", *argv, "--dsn", pg_dsn, *_closed_api())
    _unavailable(code, out, err)
    store = DeadLetterStore.from_dsn(pg_dsn)
    assert store.get(letters[0]).status == "dlq"  # type: ignore[union-attr]
    assert store.replays(letters[0]) == [] and [e.event for e in store.events(letters[0])] == ["filed"]


def test_replay_refused_by_airflow_records_clear_failed_and_exits_1(pg_dsn, letters, capsys, refusing_api):
    """Airflow answers but clears nothing: the claim is released, the replay is recorded as clear-failed, exit 1."""
    argv = ["--id", str(letters[0]), "--actor", "ana", "--reason", "fixed", "--fix-version", "v2", "--json"]
    code, out, err = _run(capsys, "dlq", "replay", *argv, "--dsn", pg_dsn, *refusing_api)
    assert code == 1 and json.loads(out)["counts"] == {"clear-failed": 1}
    assert f"[1/1] letter {letters[0]}: clear-failed" in err and "pw" not in err
    store = DeadLetterStore.from_dsn(pg_dsn)
    assert store.get(letters[0]).status == "dlq"  # type: ignore[union-attr]
    assert [r.outcome for r in store.replays(letters[0])] == ["clear-failed"]


def test_drive_with_airflow_down_is_exit_3(pg_dsn, letters, capsys):
    """The job driver checks Airflow's API before it starts its loop."""
    _unavailable(*_run(capsys, "dlq", "drive", "--dsn", pg_dsn, *_closed_api()))


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


def _script(*argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The installed ``airflow-retry`` with no provider connection unless given in ``env``."""
    import os

    base = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW_CONN_RETRY_PROVIDER")}
    return subprocess.run(
        [str(VENV_BIN / "airflow-retry"), *argv],
        capture_output=True,
        text=True,
        env={**base, **env},
        timeout=120,
    )


def test_a_missing_connection_is_one_line_saying_how_to_set_it_and_exit_2():
    """With no connection configured: exit 2 and one line naming AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT and --dsn."""
    result = _script("dlq", "list")
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert "AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT=" in line and "--dsn" in line, line


@pytest.mark.parametrize("where", ["conn", "dsn"])
def test_a_database_that_is_down_is_one_line_and_exit_3(where: str):
    """Nothing listening on the database's port: exit 3, one line saying the database is unavailable, no traceback."""
    down = f"postgresql://u:hunter2pw@127.0.0.1:{free_port()}/db"
    if where == "conn":
        result = _script("dlq", "list", AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT=down)
    else:
        result = _script("dlq", "list", "--dsn", down)
    assert result.returncode == 3, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("airflow-retry: database unavailable:") and "hunter2pw" not in line


def test_debug_shows_the_traceback():
    """``--debug`` anywhere on the line adds Python's traceback before the one-line error; the exit code stays 3."""
    result = _script("dlq", "list", "--debug", "--dsn", f"postgresql://u@127.0.0.1:{free_port()}/db")
    assert result.returncode == 3 and "Traceback (most recent call last)" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("airflow-retry: database unavailable:")


def test_airflows_api_down_is_one_line_and_exit_3(tmp_path, capsys):
    """Airflow's API not answering where a command needs it (pools sync): exit 3, one line saying so."""
    deps = tmp_path / "deps.yaml"
    deps.write_text(
        "weights: {heavy: 2, light: 1}\ndependencies:\n  positions_db: {slots: 2, description: x}\n"
    )
    api = f"http://127.0.0.1:{free_port()}"
    argv = ["pools", "sync", "--file", str(deps), "--api-url", api, "--api-user", "a", "--api-password", "pw"]
    code, out, err = _run(capsys, *argv)
    assert code == 3 and out == ""
    (line,) = err.strip().splitlines()
    assert (
        line.startswith("airflow-retry: Airflow's API unavailable:")
        and "unreachable" in line
        and "pw" not in line
    )


def test_replay_records_the_unverified_actor_and_show_prints_the_history(
    pg_dsn, letters, capsys, refusing_api
):
    """--actor is stored unverified next to the OS user; show prints filed -> claimed -> clear-failed."""
    import getpass

    argv = [
        "--id",
        str(letters[0]),
        "--actor",
        "ana",
        "--reason",
        "fixed",
        "--fix-version",
        "v2",
        "--task-only",
    ]
    code, out, _ = _run(capsys, "dlq", "replay", *argv, "--dsn", pg_dsn, *refusing_api)
    assert code == 1 and out.startswith("replay job ")
    (replay,) = DeadLetterStore.from_dsn(pg_dsn).replays(letters[0])
    assert (replay.actor, replay.actor_verified, replay.os_user) == ("ana", False, getpass.getuser())
    assert (replay.source, replay.downstream) == ("cli", False)
    code, out, _ = _run(capsys, "dlq", "show", "--id", str(letters[0]), "--dsn", pg_dsn)
    history = [line.split()[3] for line in out.splitlines() if line.strip().startswith("history:")]
    assert code == 0 and history == ["filed", "claimed", "clear-failed"]
    assert f"ana (unverified, os user {getpass.getuser()}) via cli" in out


def test_job_and_cancel_read_the_table_and_refuse_bad_input(pg_dsn, letters, capsys):
    """job shows a job's counts; cancel of an unknown or finished job exits 2 naming --job, changing nothing."""
    from airflow_retry_provider.dlq.replay import ReplayRequest
    from airflow_retry_provider.dlq.store import JobStore

    store = DeadLetterStore.from_dsn(pg_dsn)
    job_id = JobStore(store.db).create(ReplayRequest("ana", "go", "v1"), [store.get(i) for i in letters])  # type: ignore[misc]
    code, out, err = _run(capsys, "dlq", "cancel", "--job", str(job_id), "--actor", "bia", "--dsn", pg_dsn)
    assert code == 0 and "2 letter(s) not yet cleared stay in dlq" in out
    code, out, _ = _run(capsys, "dlq", "job", "--job", str(job_id), "--dsn", pg_dsn, "--json")
    document = json.loads(out)
    assert code == 0 and (document["status"], document["counts"]) == ("cancelled", {"cancelled": 2})
    code, _, err = _run(capsys, "dlq", "cancel", "--job", str(job_id), "--actor", "bia", "--dsn", pg_dsn)
    assert (
        code == 2
        and err.strip()
        == f"airflow-retry: job: {job_id} is cancelled; only a queued or running job can be cancelled"
    )
    code, _, err = _run(capsys, "dlq", "job", "--job", "424242", "--dsn", pg_dsn)
    assert code == 2 and "job: 424242 is not a replay job id" in err
    code, _, err = _run(capsys, "dlq", "cancel", "--job", "x1", "--actor", "bia", "--dsn", pg_dsn)
    assert code == 2 and "--job: 'x1' is not a positive integer" in err
    assert {store.get(i).status for i in letters} == {"dlq"}  # type: ignore[union-attr]


def test_rate_above_the_deployment_pace_is_refused(pg_dsn, letters, capsys, monkeypatch):
    """--rate may only slow a replay down: above [retry_provider] replay_rate_per_minute it exits 2."""
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__REPLAY_RATE_PER_MINUTE", "5")
    argv = ["--id", str(letters[0]), "--actor", "a", "--reason", "r", "--fix-version", "v", "--rate", "6"]
    code, _, err = _run(capsys, "dlq", "replay", *argv, "--dsn", pg_dsn, *_closed_api())
    assert code == 2 and "--rate: 6 is above the deployment's pace of 5" in err
    assert DeadLetterStore.from_dsn(pg_dsn).replays(letters[0]) == []


def test_preview_numbers_a_version_airflow_still_has_before_any_sweep(pg_dsn, capsys):
    """A letter filed with only its DAG version's UUID (no sweep yet) previews as ``v4``, the number
    Airflow's API gives, not "number unknown"; the letter keeps it; only the previewed DAG is asked."""
    from tests.local_airflow import FAULT_DAG, fault_airflow

    version_id = "0195f3c2-0000-7000-8000-000000000004"
    store = DeadLetterStore.from_dsn(pg_dsn)
    letter = store.file(
        new_letter(dag_id=FAULT_DAG, run_id="r1", task_id="a", dag_version_id=version_id), replay_cap=3
    )
    assert store.get(letter.letter_id).version_label() == "version 0195f3c2 (number unknown)"
    # a letter the preview does not select: its DAG is not asked about
    store.file(new_letter(dag_id="other_dag", run_id="r1", dag_version_id=version_id), replay_cap=3)
    with fault_airflow(30.0) as (url, fake):
        fake.add_run("r1", {"a": "failed", "b": "upstream_failed"})
        fake.versions.append(
            {"id": version_id, "dag_id": FAULT_DAG, "version_number": 4, "bundle_name": "dags-folder"}
        )
        code, out, err = _run(
            capsys, "dlq", "preview", "--id", str(letter.letter_id), "--dsn", pg_dsn,
            "--api-url", url, "--api-user", "admin", "--api-password", "pw",
        )  # fmt: skip
    assert code == 0, err
    assert out.splitlines()[0].endswith("  v4") and "number unknown" not in out
    assert fake.version_reads == [FAULT_DAG]  # one call, for the previewed letter's DAG only
    assert store.get(letter.letter_id).dag_version_number == 4


def test_list_numbers_the_versions_airflow_still_has_one_call_per_dag(pg_dsn, capsys):
    """``dlq list`` before any sweep says ``v4`` for a version Airflow still has (one dagVersions call per DAG
    whose letters lack a number, the number stored), ``v?`` for one Airflow does not have."""
    from tests.local_airflow import FAULT_DAG, fault_airflow

    version_id = "0195f3c2-0000-7000-8000-000000000004"
    store = DeadLetterStore.from_dsn(pg_dsn)
    ids = [
        store.file(
            new_letter(dag_id=dag_id, run_id=run_id, dag_version_id=version_id), replay_cap=3
        ).letter_id
        for dag_id, run_id in ((FAULT_DAG, "r1"), (FAULT_DAG, "r2"), ("deleted_dag", "r1"))
    ]
    api = ["--api-url", "", "--api-user", "admin", "--api-password", "pw"]
    with fault_airflow(30.0) as (url, fake):
        api[1] = url
        fake.versions.append(
            {"id": version_id, "dag_id": FAULT_DAG, "version_number": 4, "bundle_name": "dags-folder"}
        )
        code, out, err = _run(capsys, "dlq", "list", "--dsn", pg_dsn, "--no-header", *api)
        assert code == 0, err
        rows = {int(row.split()[0]): row for row in out.splitlines()}
        assert rows[ids[0]].endswith("  v4") and rows[ids[1]].endswith("  v4"), out
        assert rows[ids[2]].endswith("  v?"), out  # the DAG is gone from Airflow (404): never a guess
        assert sorted(fake.version_reads) == sorted([FAULT_DAG, "deleted_dag"])  # one call per DAG
        fake.version_reads.clear()
        code, out, _ = _run(capsys, "dlq", "list", "--dsn", pg_dsn, "--dag", FAULT_DAG, *api)
        assert code == 0 and fake.version_reads == []  # numbered once, stored: no call the next time
    assert store.get(ids[0]).dag_version_number == 4


def test_list_without_an_api_connection_prints_the_letters_and_says_why_v_is_unknown(
    pg_dsn, capsys, monkeypatch
):
    """Without Airflow's API the list still prints (exit 0), ``v?`` for an unnumbered version, and one
    line on stderr saying the numbers were not looked up and why."""
    monkeypatch.delenv("AIRFLOW_CONN_RETRY_PROVIDER_AIRFLOW_API", raising=False)
    store = DeadLetterStore.from_dsn(pg_dsn)
    letter_id = store.file(
        new_letter(dag_id="etl", run_id="r1", dag_version_id="0195f3c2-0000-7000-8000-000000000004"), 3
    ).letter_id
    code, out, err = _run(capsys, "dlq", "list", "--dsn", pg_dsn, "--no-header", *_closed_api())
    assert code == 0 and out.split()[0] == str(letter_id) and out.rstrip().endswith("  v?"), out
    (line,) = err.strip().splitlines()
    assert line.startswith("airflow-retry: DAG version numbers not looked up (Airflow's API unavailable"), (
        line
    )
    assert "'v?' until the next sweep" in line


def test_empty_answers_say_they_are_empty_and_exit_1(pg_dsn, capsys):
    """An empty queue, a filter that matches nothing and an unknown id each say so (exit 1), not silence."""
    assert _run(capsys, "dlq", "list", "--dsn", pg_dsn) == (1, "no letter in the queue\n", "")
    code, out, _ = _run(capsys, "dlq", "list", "--category", "notfound", "--dsn", pg_dsn)
    assert (code, out) == (1, "no letter matches these filters\n")
    code, out, err = _run(capsys, "dlq", "show", "--id", "99", "--dsn", pg_dsn)
    assert (code, out, err) == (1, "", "no letter 99: never filed, or purged long ago\n")
    code, out, err = _run(capsys, "dlq", "list", "--json", "--dsn", pg_dsn)
    assert (code, json.loads(out)["count"], err) == (1, 0, "no letter in the queue\n")
    park = ["dlq", "park", "--dag", "nope", "--actor", "a", "--reason", "r", "--dsn", pg_dsn]
    assert _run(capsys, *park) == (1, "no letter matches these filters\n", "")


def test_the_list_header_lines_up_with_its_rows(pg_dsn, capsys):
    """Each column of ``dlq list`` starts where its header starts, whatever the DAG and run ids' lengths."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    for dag_id, run_id in (("etl", "r1"), ("a_much_longer_dag_name", "scheduled__2026-11-01T00:00:00+00:00")):
        store.file(replace(LETTER, dag_id=dag_id, run_id=run_id), replay_cap=3)
    code, out, _ = _run(capsys, "dlq", "list", "--dsn", pg_dsn)
    header, *rows = out.splitlines()
    assert code == 0 and len(rows) == 2
    for column in ("status", "filed", "dag/task", "run", "class/category", "fingerprint", "dag version"):
        start = header.index(column)
        assert all(row[start] != " " and row[start - 2 : start] == "  " for row in rows), (column, out)
