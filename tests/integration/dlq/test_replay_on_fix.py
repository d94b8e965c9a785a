"""A replay that runs on the fix (issue 29 item 3), on a real PostgreSQL.

Airflow is tests/local_airflow.py (answering_airflow) (its clears' bodies are kept, its dagVersions
answer what a test sets), so a test sees exactly what the clear asked of Airflow's
``run_on_latest_version`` and what the preview says the replay will run.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from airflow_retry_provider.cli import main
from airflow_retry_provider.dlq.replay import ReplayEngine
from airflow_retry_provider.dlq.store import DeadLetterStore
from tests.factories import new_letter
from tests.local_airflow import AnsweringAirflow, answering_airflow


def _version(number: int, bundle_version: str | None = None) -> dict[str, Any]:
    return {
        "id": f"0000000{number}-aaaa-bbbb-cccc-dddddddddddd",
        "dag_id": "etl",
        "version_number": number,
        "bundle_name": "dags",
        "bundle_version": bundle_version,
        "created_at": "2026-12-02T14:02:00Z",
    }


@pytest.fixture
def fake() -> Iterator[AnsweringAirflow]:
    with answering_airflow() as served:
        served.versions["etl"] = [_version(n, f"c0ffee{n}") for n in range(1, 6)]
        yield served


def _filed(store: DeadLetterStore, fake: AnsweringAirflow, task_id: str = "load") -> int:
    fake.set("etl", "r1", task_id, "failed", 1)
    letter = new_letter(task_id=task_id, dag_version_number=3, bundle_name="dags", bundle_version="c0ffee3")
    return store.file(letter, replay_cap=3).letter_id


def test_the_preview_says_the_replay_runs_on_the_latest_version_when_asked(pg_dsn, fake):
    """Asked for the latest: the preview names v5 from Airflow's dagVersions and its dry-run asks run_on_latest_version."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    letter_id = _filed(store, fake)
    preview = ReplayEngine(store, fake.api(), replay_cap=3).preview(
        ids=[letter_id], run_on_latest_version=True
    )
    (item,) = preview.items
    assert item.runs_on == "v5 (bundle dags@c0ffee5)"
    assert preview.to_json()["runs_on"] == ["v5 (bundle dags@c0ffee5)"]
    assert fake.clears[-1]["dry_run"] is True and fake.clears[-1]["run_on_latest_version"] is True


def test_the_preview_says_the_letters_own_version_when_not_asked(pg_dsn, fake):
    """Not asked: the run's own version (the one the letter failed on); the body leaves Airflow's default, or says false."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    letter_id = _filed(store, fake)
    engine = ReplayEngine(store, fake.api(), replay_cap=3)
    (item,) = engine.preview(ids=[letter_id]).items
    assert item.runs_on.startswith("v3 (bundle dags@c0ffee3), the run's own (unless the DAG or [core]")
    assert "run_on_latest_version" not in fake.clears[-1]
    (item,) = engine.preview(ids=[letter_id], run_on_latest_version=False).items
    assert item.runs_on == "v3 (bundle dags@c0ffee3), the run's own"
    assert fake.clears[-1]["run_on_latest_version"] is False
    assert fake.calls["dag_versions"] == 0  # the latest is asked only when it is what runs


def test_a_dag_airflow_no_longer_has_gives_no_version_and_no_error(pg_dsn, fake):
    """dagVersions answers 404: the preview says Airflow reports none, and no fix version is made up."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    letter_id = _filed(store, fake)
    del fake.versions["etl"]
    engine = ReplayEngine(store, fake.api(), replay_cap=3)
    (item,) = engine.preview(ids=[letter_id], run_on_latest_version=True).items
    assert item.runs_on == "the latest version (Airflow reports none)" and item.error is None
    assert engine.latest_fix_version(fake.api(), ["etl"]) is None


def test_a_replay_on_the_latest_version_records_it_as_the_fix_version(pg_dsn, fake, capsys):
    """``dlq replay --run-on-latest-version`` without --fix-version: the clear asks for the latest, the replay records v5."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    ids = [_filed(store, fake, "a"), _filed(store, fake, "b")]
    api = ["--api-url", fake.url, "--api-user", "admin", "--api-password", "admin"]
    code = main(
        ["dlq", "replay", "--dag", "etl", "--actor", "ana", "--reason", "v5 fixes the parser"]
        + ["--run-on-latest-version", "--no-canary", "--dsn", pg_dsn, *api]
    )
    assert code == 0, capsys.readouterr()
    sent = [body for body in fake.clears if not body["dry_run"]]
    assert len(sent) == 2 and all(body["run_on_latest_version"] is True for body in sent)
    assert {store.replays(i)[0].fix_version for i in ids} == {"v5 (bundle dags@c0ffee5)"}
    job_id = store.replays(ids[0])[0].job_id
    assert main(["dlq", "job", "--job", str(job_id), "--json", "--dsn", pg_dsn]) == 0
    assert '"run_on_latest_version": true' in capsys.readouterr().out


def test_a_replay_without_a_fix_version_or_the_latest_is_refused_naming_the_flag(pg_dsn, fake, capsys):
    """Neither --fix-version nor --run-on-latest-version: a usage error naming --fix-version, nothing claimed."""
    store = DeadLetterStore.from_dsn(pg_dsn)
    letter_id = _filed(store, fake)
    api = ["--api-url", fake.url, "--api-user", "admin", "--api-password", "admin"]
    code = main(
        ["dlq", "replay", "--id", str(letter_id), "--actor", "ana", "--reason", "r", "--dsn", pg_dsn, *api]
    )
    assert code != 0
    assert "--fix-version" in capsys.readouterr().err
    assert store.replays(letter_id) == []


@pytest.mark.parametrize(
    ("version", "sent"),
    [
        ("3.3.2", None),  # 3.3 refuses the field (422) and has no task state store to wipe
        ("3.4.0b2", True),  # 3.4's default would wipe what the task stored: the replay keeps it
        ("3.4.0", True),  # the final release, when it comes, the same
    ],
)
def test_a_replay_keeps_the_task_state_where_airflow_takes_it(pg_dsn, fake, capsys, version, sent):
    """The preview and the clear send keep_task_state=true to Airflow 3.4 and never send it to 3.3."""
    fake.version = version
    store = DeadLetterStore.from_dsn(pg_dsn)
    letter_id = _filed(store, fake)
    client = fake.api()
    ReplayEngine(store, client, replay_cap=3).preview(ids=[letter_id])
    ReplayEngine(store, client, replay_cap=3).preview(ids=[letter_id])
    assert [body.get("keep_task_state") for body in fake.clears] == [sent, sent]
    assert fake.calls["version"] == 1  # asked once per client
    api = ["--api-url", fake.url, "--api-user", "admin", "--api-password", "admin"]
    code = main(
        ["dlq", "replay", "--id", str(letter_id), "--actor", "ana", "--reason", "r", "--fix-version", "v6"]
        + ["--no-canary", "--dsn", pg_dsn, *api]
    )
    assert code == 0, capsys.readouterr()
    (cleared,) = [body for body in fake.clears if not body["dry_run"]]
    assert cleared.get("keep_task_state") is sent
    assert store.get(letter_id).status == "replaying"
