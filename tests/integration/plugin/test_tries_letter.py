"""The try that dead-lettered is explained too (issue 29 item 5): the Retries tab and ``/api/tries``
on Airflow's real metadata database after ``dag.test()``, with the letter its callback filed."""

from __future__ import annotations

import psycopg
import pytest

from airflow_retry_provider.airflow_compat import installed_version
from tests.conftest import metadata_dsn
from tests.dag_files import policy_dags
from tests.integration.dlq import support
from tests.integration.plugin.test_app import Ui, airflow_auth, text_of, ui  # noqa: F401

DAG_ID, TASK_ID = "policy_poison_between_valid", "invalid_job"
KEEPS_REASON_ON_FAIL = installed_version() >= (3, 4)  # 3.3 stores no reason when a policy decides FAIL


@pytest.fixture
def poison_run(ui: Ui, provider_conn: str):  # noqa: F811
    """A real run whose ``invalid_job`` failed poison at try 1 and was dead-lettered into the app's database."""
    return policy_dags.poison_dag.test()


def _params(run) -> dict:
    return {"dag_id": DAG_ID, "run_id": run.run_id, "task_id": TASK_ID}


def _airflow_reason(run) -> str | None:
    with psycopg.connect(metadata_dsn()) as conn:
        (reason,) = conn.execute(
            "SELECT retry_reason FROM task_instance WHERE dag_id = %s AND run_id = %s AND task_id = %s",
            (DAG_ID, run.run_id, TASK_ID),
        ).fetchone()
    return reason


@pytest.mark.skipif(KEEPS_REASON_ON_FAIL, reason="Airflow 3.3 keeps no reason on FAIL")
def test_the_try_that_dead_lettered_shows_its_letters_decision(ui: Ui, poison_run):  # noqa: F811
    """Airflow 3.3 kept no reason for the FAIL try; the API gives the letter's class, category, rule and reason, saying so."""
    assert _airflow_reason(poison_run) is None  # the premise: 3.3 stores nothing on FAIL
    (letter,) = [row for row in support.rows(ui.dsn) if row["task_id"] == TASK_ID]
    data = ui.get("/api/tries", **_params(poison_run)).json()
    (tried,) = data["tries"]
    assert (tried["try_number"], tried["state"], tried["source"], tried["letter_id"]) == (
        1,
        "failed",
        "letter",
        letter["id"],
    )
    assert tried["reason"] == letter["reason"] and tried["reason"].startswith(
        "[attempt 1/3] dead letter poison/"
    )
    decision = tried["decision"]
    assert (decision["failure_class"], decision["category"], decision["dead_letter"]) == (
        "poison",
        "not-found",
        "not-found",
    )
    assert (decision["rule"], decision["attempt"], decision["max_attempts"]) == (letter["rule"], 1, 3)
    page = ui.get("/tries", html=True, **_params(poison_run)).text
    words = text_of(page)
    assert "poison / not-found" in words and f"from letter {letter['id']}" in words
    assert f'href="/letters/{letter["id"]}"' in page


@pytest.mark.skipif(not KEEPS_REASON_ON_FAIL, reason="Airflow 3.4 keeps the reason on FAIL")
def test_on_3_4_the_try_that_dead_lettered_shows_airflows_own_reason(ui: Ui, poison_run):  # noqa: F811
    """Airflow 3.4 kept the policy's reason for the FAIL try: the API shows it, source airflow, read back like the letter's."""
    kept = _airflow_reason(poison_run)
    (letter,) = [row for row in support.rows(ui.dsn) if row["task_id"] == TASK_ID]
    assert kept and "dead letter poison/not-found" in kept  # the premise: 3.4 stores it on FAIL
    (tried,) = ui.get("/api/tries", **_params(poison_run)).json()["tries"]
    assert (tried["try_number"], tried["state"], tried["source"], tried["reason"]) == (
        1,
        "failed",
        "airflow",
        kept,
    )
    decision = tried["decision"]
    assert (decision["failure_class"], decision["category"], decision["rule"]) == (
        "poison",
        "not-found",
        letter["rule"],
    )
    assert "letter_id" not in tried


def test_a_reason_airflow_kept_wins_over_the_letter(ui: Ui, poison_run):  # noqa: F811
    """Where Airflow stored a reason for that try (as 3.4 does on FAIL), the API shows Airflow's, source airflow."""
    kept = "[attempt 1/3] [rule kept-by-airflow] dead letter poison/not-found: RuntimeError: kept"
    with psycopg.connect(metadata_dsn(), autocommit=True) as conn:
        conn.execute(
            "UPDATE task_instance SET retry_reason = %s WHERE dag_id = %s AND run_id = %s AND task_id = %s",
            (kept, DAG_ID, poison_run.run_id, TASK_ID),
        )
    (tried,) = ui.get("/api/tries", **_params(poison_run)).json()["tries"]
    assert (tried["source"], tried["reason"], tried["decision"]["rule"]) == (
        "airflow",
        kept,
        "kept-by-airflow",
    )
    assert "letter_id" not in tried


def test_tries_without_a_letter_say_where_their_reason_came_from(ui: Ui, provider_conn):  # noqa: F811
    """Retries whose reasons Airflow kept say ``airflow``; the success, with no reason and no letter, says nothing."""
    run = policy_dags.transient_dag.test()
    params = {"dag_id": "policy_transient_recovers", "run_id": run.run_id, "task_id": "flaky"}
    data = ui.get("/api/tries", **params).json()
    assert [t["source"] for t in data["tries"]] == ["airflow", "airflow", None]
    assert data["letter_id"] is None and data["letter_error"] is None
