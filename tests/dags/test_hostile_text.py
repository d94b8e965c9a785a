"""Text a task raises can never lose its letter: NUL and lone surrogates, through Airflow's task runner."""

from __future__ import annotations

import pytest

from airflow_retry_provider.policy.text import REPLACEMENT
from tests.conftest import task_tries
from tests.dag_files import hostile_text_dags
from tests.integration.dlq import support

pytestmark = pytest.mark.dags


def test_a_nul_in_the_message_and_params_files_the_letter_with_it_replaced(airflow_db, provider_conn):
    """A task raising NUL and lone surrogates (in its message) is filed; Airflow keeps the retry reason."""
    run = hostile_text_dags.nul_dag.test()
    (row,) = support.rows(provider_conn)
    assert (row["task_id"], row["failure_class"], row["status"], row["try_number"]) == (
        "flaky_then_poison",
        "poison",
        "dlq",
        2,
    )
    assert f'relation "positions{REPLACEMENT}v2" not found' in row["message"]
    assert f"bad{REPLACEMENT}input {REPLACEMENT}" in row["message"]
    assert f"positions{REPLACEMENT}v2" in row["reason"]
    (event,) = support.rows(provider_conn, "retry_letter_events")
    assert event["event"] == "filed" and "\x00" not in event["reason"]
    tries = task_tries("hostile_nul_message", run.run_id, "flaky_then_poison")
    assert [t[0] for t in tries] == [1, 2] and tries[1][1] == "failed"
    assert f"Connection reset by{REPLACEMENT}peer {REPLACEMENT}" in tries[0][3]  # the retry's reason
