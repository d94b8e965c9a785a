"""The Retries tab and ``/api/tries`` against Airflow's real metadata database, through FastAPI's TestClient.

A DAG run by ``dag.test()`` leaves real tries in ``task_instance`` and ``task_instance_history``
(with the delays and reasons the retry policy chose); the users and tokens are those of
``test_plugin_app``.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import psycopg
import pytest

from airflow_retry_provider.airflow_compat import one_row_per_try
from airflow_retry_provider.identity import make_work_unit_key
from airflow_retry_provider.policy import PROFILES
from tests.conftest import metadata_dsn
from tests.dag_files import policy_dags
from tests.integration.plugin.test_app import DAG_B, Ui, airflow_auth, text_of, ui  # noqa: F401

DAG_ID, TASK_ID = "policy_transient_recovers", "flaky"


@pytest.fixture
def run(ui: Ui, provider_conn: str):  # noqa: F811
    """A real run whose task failed twice on a connection reset and succeeded on its third try."""
    return policy_dags.transient_dag.test()


def test_a_dag_the_user_may_not_read_is_403(ui: Ui):  # noqa: F811
    """Tab and API check read access to the DAG's task instances first (run before dag.test() resyncs bundles)."""
    params = {"dag_id": DAG_B, "run_id": "r", "task_id": "t"}
    assert ui.get("/api/tries", user="viewer_a", **params).status_code == 403
    assert ui.get("/tries", user="viewer_a", **params).status_code == 403
    assert ui.get("/api/tries", user="admin", **params).status_code == 404


def _params(run, **changes) -> dict:
    return {"dag_id": DAG_ID, "run_id": run.run_id, "task_id": TASK_ID, **changes}


def test_the_api_gives_every_try_with_its_delay_reason_and_rule(ui: Ui, run):  # noqa: F811
    """Each try's state and times, the delay the policy chose, and the class, category and rule read back."""
    answer = ui.get("/api/tries", **_params(run))
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert (data["state"], data["try_number"], data["next_try_at"], data["schedule"]) == (
        "success",
        3,
        None,
        None,
    )
    assert [t["try_number"] for t in data["tries"]] == [1, 2, 3]
    assert [t["state"] for t in data["tries"]] == ["failed", "failed", "success"]  # as Airflow records them
    key = make_work_unit_key(DAG_ID, TASK_ID, -1, run.data_interval_start, run.data_interval_end, run.run_id)
    for attempt, tried in zip((1, 2), data["tries"], strict=False):
        assert timedelta(seconds=tried["delay_seconds"]) == policy_dags.FAST.delay(attempt, key)
        assert tried["start_date"] and tried["end_date"]
        assert tried["reason"].startswith(f"[attempt {attempt + 1}/3] [after ")
        decision = tried["decision"]
        assert (decision["failure_class"], decision["category"]) == ("retryable", "connection-failed")
        assert decision["rule"] and f"[rule {decision['rule']}]" in tried["reason"]
        assert decision["attempt"] == attempt + 1 and decision["max_attempts"] == 3
        assert decision["profile"] is None  # the DAG overrides the profile's backoff
    assert data["tries"][2]["reason"] is None and data["tries"][2]["delay_seconds"] is None


def test_a_task_up_for_retry_shows_its_next_try_and_the_schedule_ahead(ui: Ui, run):  # noqa: F811
    """Up for retry under a profile: when the next try starts and the attempts after it, from the profile's backoff."""
    ended = datetime(2026, 11, 30, 10, 0, tzinfo=timezone.utc)
    reason = (
        "[attempt 2/3] [after 2026-11-30T10:05:00Z] [rule r] [profile report] "
        "retryable/connection-failed: ConnectionResetError: reset"
    )
    with psycopg.connect(metadata_dsn(), autocommit=True) as conn:
        conn.execute(
            "UPDATE task_instance SET state = 'up_for_retry', end_date = %(ended)s,"
            " retry_delay_override = 300, retry_reason = %(reason)s"
            " WHERE dag_id = %(dag_id)s AND run_id = %(run_id)s AND task_id = %(task_id)s",
            {"ended": ended, "reason": reason, **_params(run)},
        )
    data = ui.get("/api/tries", **_params(run)).json()
    next_try = ended + timedelta(seconds=300)
    assert data["next_try_at"] == next_try.isoformat()
    key = make_work_unit_key(DAG_ID, TASK_ID, -1, run.data_interval_start, run.data_interval_end, run.run_id)
    delay = PROFILES["report"].backoff.delay(2, key)
    assert data["schedule"] == {
        "profile": "report",
        "deadline": None,
        "until": "ceiling",
        "attempts": [
            {"attempt": 2, "offset_seconds": 0.0, "at": next_try.isoformat()},
            {"attempt": 3, "offset_seconds": delay.total_seconds(), "at": (next_try + delay).isoformat()},
        ],
    }
    page = text_of(ui.get("/tries", html=True, **_params(run, map_index="{MAP_INDEX}")).text)
    assert "Next try starts at 2026-11-30 07:05:00" in page  # São Paulo time
    assert "Remaining schedule (profile report )" in page and "retryable / connection-failed" in page


def test_the_tab_shows_each_try_with_reason_and_delay(ui: Ui, run):  # noqa: F811
    """The Retries tab lists the tries with their reason and the delay chosen, as text."""
    page = ui.get("/tries", html=True, **_params(run, map_index="{MAP_INDEX}"))
    assert page.status_code == 200
    text = text_of(page.text)
    assert "[attempt 2/3] [after" in text and "[attempt 3/3] [after" in text
    assert text.count("retryable / connection-failed") == 2
    assert 'data-try="3"' in page.text


def test_an_unknown_task_instance_is_404_and_an_unreadable_dag_403(ui: Ui, run):  # noqa: F811
    """No such task instance: 404 naming it; a bad map_index: 422 naming the field."""
    missing = ui.get("/api/tries", **_params(run, task_id="nope"))
    assert missing.status_code == 404 and "task_id='nope'" in missing.json()["detail"]
    bad = ui.get("/api/tries", **_params(run, map_index="x"))
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["query", "map_index"]


@pytest.mark.skipif(not one_row_per_try(), reason="Airflow 3.4's one row per try")
def test_the_row_made_for_the_next_try_is_listed_without_what_it_copied(ui: Ui, run):  # noqa: F811
    """3.4: the next try's row (made at once by Airflow, a copy of the failed try) is a waiting try, not a second failure."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    ended = datetime(2026, 11, 30, 10, 0, tzinfo=timezone.utc)
    reason = "[attempt 4/4] [after 2026-11-30T10:05:00Z] [rule r] retryable/connection-failed: reset"
    with create_session() as session:
        ti = session.scalars(select(TaskInstance).filter_by(**_params(run), map_index=-1)).one()
        ti.state, ti.end_date, ti.retry_delay_override, ti.retry_reason = "up_for_retry", ended, 300, reason
        session.flush()
        ti.prepare_db_for_next_try(session)  # what Airflow's execution API does on a retry
    data = ui.get("/api/tries", **_params(run)).json()
    assert (data["state"], data["try_number"]) == ("up_for_retry", 4)
    assert [(t["try_number"], t["state"]) for t in data["tries"]] == [
        (1, "failed"),
        (2, "failed"),
        (3, "failed"),  # archived for the retry
        (4, "up_for_retry"),  # waiting: it has not run
    ]
    assert data["tries"][2]["reason"] == reason and data["tries"][2]["delay_seconds"] == 300
    waiting = data["tries"][3]
    assert (waiting["reason"], waiting["delay_seconds"], waiting["start_date"]) == (None, None, None)
    assert data["next_try_at"] == (ended + timedelta(seconds=300)).isoformat()
