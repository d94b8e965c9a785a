"""``testing_delays``: ``dag.test()`` of a retried task in seconds, with every decision and letter unchanged."""

from __future__ import annotations

import time
from datetime import timedelta

import psycopg
import pytest

from airflow_retry_provider import testing_delays
from airflow_retry_provider.identity import make_work_unit_key
from airflow_retry_provider.policy import PROFILES
from airflow_retry_provider.retry_policy import ClassifiedRetryPolicy
from airflow_retry_provider.testing import scaled_delay
from tests.conftest import task_tries
from tests.dag_files import testing_dags

pytestmark = pytest.mark.dags


def test_a_retried_task_waits_the_scaled_delay_and_keeps_its_decision(airflow_db, provider_conn, caplog):
    """Under the switch the 5-minute retry waits at most 1 s, the reason still says the real delay,
    and the poison task is still a dead letter at its first try."""
    caplog.set_level("INFO")
    with testing_delays():
        run = testing_dags.report_dag.test()
    states = {ti.task_id: (ti.state, ti.try_number) for ti in run.get_task_instances()}
    assert states == {"flaky": ("success", 2), "poison": ("failed", 1)}

    key = make_work_unit_key(
        "testing_delays_report", "flaky", -1, run.data_interval_start, run.data_interval_end, run.run_id
    )
    real = PROFILES["report"].backoff.delay(1, key)  # what production waits: 3m45s to 5m
    (_, _, delay_override, reason), _ = task_tries("testing_delays_report", run.run_id, "flaky")
    assert timedelta(seconds=delay_override) == scaled_delay(real, 0.001, timedelta(seconds=1))
    assert reason.startswith("[attempt 2/3] [after ") and "retryable/connection-failed" in reason
    assert f"(testing): retry in {scaled_delay(real, 0.001, None).total_seconds():g} s instead of {real}" in (
        caplog.text
    )

    with psycopg.connect(provider_conn) as conn:
        letters = conn.execute(
            "SELECT task_id, failure_class, attempts_used FROM retry_dead_letters"
        ).fetchall()
    assert letters == [("poison", "poison", 1)]


def test_the_pytest_fixture_runs_a_retried_dag_in_seconds(
    airflow_db, provider_conn, retry_testing_delays, capfd, caplog
):
    """With the plugin's fixture (no code but its name) a 5-minute retry finishes in well under 30 s,
    and the first failure's decision is logged once: Airflow's ``Retry policy decision`` line, ours beside it."""
    caplog.set_level("INFO")
    started = time.monotonic()
    run = testing_dags.dashboard_dag.test()
    elapsed = time.monotonic() - started
    assert [(ti.state, ti.try_number) for ti in run.get_task_instances()] == [("success", 2)]
    assert elapsed < 30, f"dag.test() took {elapsed:.1f} s"
    out, err = capfd.readouterr()
    lines = [line for line in (out + err).splitlines() if "[attempt 2/2]" in line]
    # a first failure under dashboard (2 attempts): one line, Airflow's own (the provider logs no copy)
    assert len(lines) == 1 and "Retry policy decision" in lines[0], lines
    assert caplog.text.count("airflow-retry-provider (testing): retry in") == 1
    assert "[attempt 2/2]" not in caplog.text  # the provider's own logger does not repeat the decision


def test_the_pytest_plugin_is_installed(pytestconfig):
    """pytest loads the provider's plugin by its entry point, so the fixture needs no import."""
    assert pytestconfig.pluginmanager.has_plugin("airflow_retry_provider")


def test_the_switch_is_off_after_the_block():
    """Leaving the block puts the real evaluate back: a test after it sees production delays."""
    real = ClassifiedRetryPolicy.evaluate
    with testing_delays(), testing_delays(scale=0):
        assert ClassifiedRetryPolicy.evaluate is not real
    assert ClassifiedRetryPolicy.evaluate is real


@pytest.mark.parametrize(
    ("delay", "scale", "at_most", "expected"),
    [
        (timedelta(minutes=5), 0.001, timedelta(seconds=1), timedelta(milliseconds=300)),  # the default
        (timedelta(hours=1), 0.001, timedelta(seconds=1), timedelta(seconds=1)),  # held under at_most
        (timedelta(hours=1), 0.001, None, timedelta(seconds=3.6)),  # no bound
        (timedelta(minutes=5), 0, None, timedelta(0)),  # retry at once
    ],
)
def test_scaled_delay(delay, scale, at_most, expected):
    """The wait is the delay times the scale, held under at_most, in whole milliseconds."""
    assert scaled_delay(delay, scale, at_most) == expected


@pytest.mark.parametrize("scale", [-0.1, 2, True, "0.1"])  # negative, larger than real, a bool, a string
def test_a_bad_scale_is_refused_naming_it(scale):
    """A scale outside 0..1 is a ValueError naming the parameter and the value."""
    with (
        pytest.raises(ValueError, match=rf"scale must be a number from 0 to 1, got {scale!r}"),
        testing_delays(scale),
    ):
        pass


def test_without_the_provider_database_dag_test_says_once_that_letters_are_not_filed(
    airflow_db, monkeypatch, caplog
):
    """dag.test() without the connection retry_provider_default: one info line for the run, no error line
    claiming a sweeper will file the letter, no pauses retrying a connection that does not exist."""
    monkeypatch.delenv("AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT", raising=False)
    caplog.set_level("INFO")
    with testing_delays():
        run = testing_dags.report_dag.test()
    assert {ti.task_id: ti.state for ti in run.get_task_instances()} == {
        "flaky": "success",
        "poison": "failed",
    }
    told = [
        r for r in caplog.records if "dead letters are not filed in this dag.test() run" in r.getMessage()
    ]
    assert len(told) == 1 and told[0].levelname == "INFO", caplog.text
    assert "the sweeper will file it" not in caplog.text and "dead letter not written" not in caplog.text
