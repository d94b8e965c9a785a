"""A clear the scheduler overtook: the run is queued again, so the replay runs (on a real PostgreSQL).

Airflow's clear reads the run's state without waiting for the scheduler's lock on it. When the
scheduler finishes that run at the same moment, the run commits ``failed`` and the cleared task
instance is left without a state in a finished run, which no scheduler runs
(``tests/dags/test_clear_race.py`` shows it on Airflow's own code). Airflow is
tests/local_airflow.py (answering_airflow): its ``on_clear`` is the scheduler finishing the run
while the clear is in flight.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from airflow_retry_provider.cli import main
from airflow_retry_provider.dlq.store import DeadLetterStore
from tests.factories import new_letter
from tests.local_airflow import AnsweringAirflow, answering_airflow

RUN = ("etl", "r1")


@pytest.fixture
def fake() -> Iterator[AnsweringAirflow]:
    with answering_airflow() as served:
        served.set("etl", "r1", "load", "failed", 1)
        yield served


def _replay(pg_dsn: str, fake: AnsweringAirflow, capsys: pytest.CaptureFixture[str]) -> int:
    """One letter filed and replayed through ``dlq replay`` (no canary); the letter's id."""
    letter_id = DeadLetterStore.from_dsn(pg_dsn).file(new_letter(), replay_cap=3).letter_id
    api = ["--api-url", fake.url, "--api-user", "admin", "--api-password", "admin"]
    code = main(
        ["dlq", "replay", "--id", str(letter_id), "--actor", "ana", "--reason", "table restored"]
        + ["--fix-version", "v2", "--no-canary", "--dsn", pg_dsn, *api]
    )
    assert code == 0, capsys.readouterr()
    return letter_id


def _logged(caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> str:
    """What was logged: through pytest's handler, or Airflow's (structlog, once the CLI configured it)."""
    return caplog.text + "".join(capsys.readouterr())


def _status(pg_dsn: str, letter_id: int) -> str:
    letter = DeadLetterStore.from_dsn(pg_dsn).get(letter_id)
    assert letter is not None
    return letter.status


def test_a_run_the_scheduler_finished_during_the_clear_is_queued_again(pg_dsn, fake, capsys, caplog):
    """The run was failed by the scheduler while the clear committed: the driver sets it queued, says so, and the letter is replaying."""
    fake.runs[RUN] = {"dag_run_id": "r1", "state": "running"}
    fake.on_clear = lambda: fake.runs[RUN].update(state="failed")
    with caplog.at_level(logging.WARNING, logger="airflow_retry_provider.hooks.airflow_api"):
        letter_id = _replay(pg_dsn, fake, capsys)
    assert fake.runs[RUN]["state"] == "queued"
    assert fake.calls["patch_dag_run"] == 1
    assert _status(pg_dsn, letter_id) == "replaying"
    assert "queued it again" in _logged(caplog, capsys)


def test_a_run_still_running_after_the_clear_is_left_alone(pg_dsn, fake, capsys):
    """The usual case: the run is running (or queued) after the clear; one look, no change."""
    fake.runs[RUN] = {"dag_run_id": "r1", "state": "queued"}
    letter_id = _replay(pg_dsn, fake, capsys)
    assert (fake.calls["dag_run"], fake.calls["patch_dag_run"]) == (1, 0)
    assert fake.runs[RUN]["state"] == "queued"
    assert _status(pg_dsn, letter_id) == "replaying"


def test_a_failed_look_at_the_run_leaves_the_clear_recorded(pg_dsn, fake, capsys, caplog):
    """The run cannot be read after the clear (404 here): the clear still counts, a warning names the run, nothing is patched."""
    with caplog.at_level(logging.WARNING, logger="airflow_retry_provider.hooks.airflow_api"):
        letter_id = _replay(pg_dsn, fake, capsys)
    assert (fake.calls["dag_run"], fake.calls["patch_dag_run"]) == (1, 0)
    assert _status(pg_dsn, letter_id) == "replaying"
    (replay,) = DeadLetterStore.from_dsn(pg_dsn).replays(letter_id)
    assert replay.cleared_at is not None
    assert "could not check the run r1 of etl" in _logged(caplog, capsys)
