"""The work-unit sweeper on a real PostgreSQL, after a worker SIGKILLed mid-unit."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from datetime import timedelta

import psycopg
import pytest

from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.maintenance.work_sweeper import SweeperSettings, WorkSweeper, decide
from tests.alert_notifiers import RecordingNotifier
from tests.work_remote import CREATE, DSN_ENV

OWNER_TI = "payments/scheduled__2026-11-30/settle/-1"

# A worker: claims the unit with a 1 s lease, records the remote job id, maybe submits the job, and
# is SIGKILLed before it can record the outcome (as an OOM kill does).
WORKER = """
import os, signal, sys
from datetime import timedelta
import psycopg
from airflow_retry_provider.ledger.store import Ledger
dsn, key, job_id, submit, owner_ti = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "submit", sys.argv[5]
ledger = Ledger.from_dsn(dsn)
claim = ledger.claim(key, owner_ti=owner_ti, owner_try=1, lease=timedelta(seconds=1))
if job_id != "-":
    ledger.set_remote_job_id(claim, job_id)
if submit:
    with psycopg.connect(dsn) as conn:
        conn.execute("INSERT INTO test_remote_jobs (job_id, state) VALUES (%s, 'running')", (job_id,))
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.fixture
def remote(pg_dsn, monkeypatch):
    """The remote system's table in the test database, and the lookup pointed at it."""
    with psycopg.connect(pg_dsn) as conn:
        conn.execute(CREATE)
    monkeypatch.setenv(DSN_ENV, pg_dsn)
    monkeypatch.setenv(
        "AIRFLOW__RETRY_PROVIDER__ALERT_NOTIFIERS",
        json.dumps([{"class": "tests.alert_notifiers.RecordingNotifier"}]),
    )
    RecordingNotifier.sent.clear()
    return pg_dsn


def _killed_worker(dsn: str, key: str, job_id: str, submit: bool) -> None:
    """Run a worker that dies by SIGKILL mid-unit, then wait until its lease has expired."""
    done = subprocess.run(
        [sys.executable, "-c", WORKER, dsn, key, job_id, "submit" if submit else "no", OWNER_TI], timeout=60
    )
    assert done.returncode == -signal.SIGKILL
    time.sleep(1.2)


def _sweeper(dsn: str, max_attempts: int = 10) -> WorkSweeper:
    settings = SweeperSettings(
        enabled=True, max_attempts=max_attempts, lookup_path="tests.work_remote.lookup"
    )
    return WorkSweeper(ProviderDatabase.from_dsn(dsn), settings)


def _unit(dsn: str, key: str) -> dict:
    with psycopg.connect(dsn) as conn:
        cur = conn.execute("SELECT * FROM retry_work_units WHERE work_unit_key = %s", (key,))
        names = [c.name for c in cur.description]
        return dict(zip(names, cur.fetchone(), strict=True))


def _history(dsn: str, key: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT action FROM retry_work_unit_history WHERE work_unit_key = %s ORDER BY id", (key,)
        ).fetchall()
    return [row[0] for row in rows]


def _due_now(dsn: str) -> None:
    """The unit's next sweep time passes."""
    with psycopg.connect(dsn) as conn:
        conn.execute("UPDATE retry_work_units SET next_sweep_at = now() - interval '1 second'")


def _letters(dsn: str) -> list[tuple]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT dag_id, task_id, failure_class, category, message FROM retry_dead_letters"
        ).fetchall()


def test_the_sweeper_completes_the_unit_when_the_remote_job_finishes(remote):
    """Worker killed after submitting: the sweeper waits while the job runs, then completes the unit."""
    _killed_worker(remote, "u-done", "job-done", submit=True)
    sweeper = _sweeper(remote)
    assert sweeper.sweep_once() == {"wait": ["u-done"]}
    with psycopg.connect(remote) as conn:
        conn.execute("UPDATE test_remote_jobs SET state = 'succeeded'")
    assert sweeper.sweep_once() == {}  # not due again before the interval
    _due_now(remote)
    assert sweeper.sweep_once() == {"complete": ["u-done"]}
    unit = _unit(remote, "u-done")
    assert (unit["status"], unit["result_ref"], unit["sweep_attempts"]) == (
        "succeeded",
        {"job": "job-done"},
        0,
    )
    assert unit["dedup_expires_at"] is not None
    assert _history(remote, "u-done") == ["waiting", "completed"]
    assert _letters(remote) == []


def test_the_sweeper_parks_the_unit_when_the_job_cannot_be_found(remote):
    """Worker killed before submitting: each failed sweep waits longer; at the cap the unit is parked, with a letter and an alert."""
    _killed_worker(remote, "u-lost", "job-lost", submit=False)
    sweeper = _sweeper(remote, max_attempts=3)
    assert sweeper.sweep_once() == {"later": ["u-lost"]}
    first = _unit(remote, "u-lost")
    _due_now(remote)
    assert sweeper.sweep_once() == {"later": ["u-lost"]}
    second = _unit(remote, "u-lost")
    assert (first["sweep_attempts"], second["sweep_attempts"]) == (1, 2)
    waits = [(u["next_sweep_at"] - u["updated_at"]).total_seconds() for u in (first, second)]
    assert [round(w) for w in waits] == [60, 120]
    _due_now(remote)
    assert sweeper.sweep_once() == {"park": ["u-lost"]}
    unit = _unit(remote, "u-lost")
    assert unit["status"] == "parked" and "parked after 3 failed sweeps" in unit["error"]
    assert _history(remote, "u-lost") == ["retry-later", "retry-later", "parked"]
    [(dag_id, task_id, failure_class, category, message)] = _letters(remote)
    assert (dag_id, task_id, failure_class, category) == ("payments", "settle", "unknown", "unknown-outcome")
    assert "remote job job-lost was not found" in message
    assert [m["title"] for m in RecordingNotifier.sent] == ["Work unit parked for a person: u-lost"]
    assert sweeper.sweep_once() == {}  # parked units are left to a person


def test_a_unit_at_its_create_step_is_parked_never_resubmitted(remote):
    """No remote job id: the outcome is unknown, so the unit is parked at once with a letter saying why."""
    _killed_worker(remote, "u-create", "-", submit=False)
    assert _sweeper(remote).sweep_once() == {"park": ["u-create"]}
    assert _unit(remote, "u-create")["status"] == "parked"
    [letter] = _letters(remote)
    assert "a blind resubmit could run the work twice" in letter[4]


def test_a_failed_remote_job_fails_the_unit_and_files_a_classified_letter(remote):
    """The remote side says the job failed: the unit fails and its error is filed as a letter."""
    _killed_worker(remote, "u-failed", "job-failed", submit=True)
    with psycopg.connect(remote) as conn:
        conn.execute(
            "UPDATE test_remote_jobs SET state = 'failed', error = 'relation \"ledger_v9\" does not exist'"
        )
    assert _sweeper(remote).sweep_once() == {"fail": ["u-failed"]}
    assert _unit(remote, "u-failed")["status"] == "failed"
    [(_, _, failure_class, category, message)] = _letters(remote)
    assert (failure_class, category) == ("poison", "not-found")
    assert "ledger_v9" in message


def test_a_live_unit_is_never_swept(remote):
    """A unit whose lease has not expired belongs to its worker."""
    from airflow_retry_provider.ledger.store import Ledger

    Ledger.from_dsn(remote).claim("u-live", owner_ti=OWNER_TI, owner_try=1, lease=timedelta(minutes=5))
    assert _sweeper(remote).sweep_once() == {}
    assert _history(remote, "u-live") == []


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        (
            "AIRFLOW__RETRY_PROVIDER__WORK_SWEEPER_ENABLED",
            "yes",
            "work_sweeper_enabled .* must be true or false, got 'yes'",
        ),
        (
            "AIRFLOW__RETRY_PROVIDER__WORK_SWEEPER_INTERVAL_SECONDS",
            "0",
            "work_sweeper_interval_seconds .* must be an integer from 1 to 86400, got '0'",
        ),
        (
            "AIRFLOW__RETRY_PROVIDER__WORK_SWEEPER_MAX_ATTEMPTS",
            "ten",
            "work_sweeper_max_attempts .* must be an integer from 1 to 1000, got 'ten'",
        ),
    ],
)
def test_bad_sweeper_settings_name_the_key(variable, value, expected, monkeypatch):
    """Each bad value is refused with the setting's name and the value."""
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValueError, match=expected):
        SweeperSettings.from_settings()


def test_the_sweeper_is_off_by_default(monkeypatch):
    """Without settings the sweeper is disabled, sweeps every 30 s and parks after 10 failed sweeps."""
    for key in ("ENABLED", "INTERVAL_SECONDS", "MAX_ATTEMPTS", "LOOKUP"):
        monkeypatch.delenv(f"AIRFLOW__RETRY_PROVIDER__WORK_SWEEPER_{key}", raising=False)
    assert SweeperSettings.from_settings() == SweeperSettings(
        enabled=False, interval_seconds=30, max_attempts=10
    )


def test_failed_sweeps_wait_from_one_minute_doubling_to_one_hour():
    """The delay after failed sweep n is 60 s x 2^(n-1), capped at 3600 s."""
    from airflow_retry_provider.ledger.store import WorkUnit

    unit = WorkUnit.from_row(
        {
            "work_unit_key": "k",
            "status": "running",
            "owner": "o",
            "owner_ti": None,
            "owner_try": None,
            "claims": 1,
            "claimed_from": None,
            "remote_job_id": "j",
            "result_ref": None,
            "error": None,
            "claimed_at": None,
            "lease_expires_at": None,
            "finished_at": None,
            "dedup_expires_at": None,
        }
    )
    delays = [decide(unit, n, None, None, max_attempts=50, interval=30).delay_seconds for n in range(8)]
    assert delays == [60, 120, 240, 480, 960, 1920, 3600, 3600]
