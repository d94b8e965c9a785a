"""``airflow-retry tries``: its flags and its text output (the API call itself runs in tests/e2e)."""

from __future__ import annotations

import pytest

from airflow_retry_provider.cli import main
from airflow_retry_provider.commands.tries import render

HISTORY = {
    "dag_id": "sales",
    "run_id": "scheduled__2026-11-29",
    "task_id": "load",
    "map_index": 2,
    "state": "up_for_retry",
    "try_number": 1,
    "next_try_at": "2026-11-30T10:05:00+00:00",
    "tries": [
        {
            "try_number": 1,
            "state": "up_for_retry",
            "start_date": "2026-11-30T10:00:00+00:00",
            "end_date": "2026-11-30T10:00:01+00:00",
            "delay_seconds": 271.5,
            "reason": "[attempt 2/3] [after 2026-11-30T10:05:00Z] [rule http-429] [profile report] retryable/...",
            "decision": {"failure_class": "retryable", "category": "rate-limited", "rule": "http-429"},
        }
    ],
    "schedule": {
        "profile": "report",
        "deadline": None,
        "until": "ceiling",
        "attempts": [
            {"attempt": 2, "offset_seconds": 0.0, "at": "2026-11-30T10:05:00+00:00"},
            {"attempt": 3, "offset_seconds": 540.0, "at": "2026-11-30T10:14:00+00:00"},
        ],
    },
}


def test_render_shows_each_try_the_next_one_and_the_schedule():
    """One line a try with class, rule, delay and reason; then the next try and the attempts ahead."""
    text = render(HISTORY)
    assert text.splitlines()[0] == "sales scheduled__2026-11-29 load[2]: up_for_retry, try 1"
    assert "retryable/rate-limited  rule http-429  delay 271.5s  [attempt 2/3]" in text
    assert "next try starts at 2026-11-30T10:05:00+00:00" in text
    assert "schedule ahead (profile report, until the ceiling):" in text
    assert "  attempt 3 at +540s  2026-11-30T10:14:00+00:00" in text


def test_render_says_which_tries_spent_no_attempt():
    """A killed try within the infra allowance reads "did not spend an attempt"; the code's failure "attempt spent"."""
    killed = {
        **HISTORY["tries"][0],
        "try_number": 1,
        "reason": None,
        "delay_seconds": None,
        "decision": {"failure_class": "infra", "category": "killed", "rule": None},
        "spent_attempt": False,
    }
    retried = {**HISTORY["tries"][0], "try_number": 2, "spent_attempt": True}
    text = render({**HISTORY, "tries": [killed, retried]})
    assert "try 1  up_for_retry" in text and "infra/killed  did not spend an attempt  rule -" in text
    assert "retryable/rate-limited  attempt spent  rule http-429" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--map-index", "x"], "--map-index: 'x' is not an integer >= -1"),  # not a number
        (["--map-index", "-3"], "--map-index: '-3' is not an integer >= -1"),  # below -1
    ],
)
def test_a_bad_map_index_exits_2_naming_the_flag(argv, message, capsys):
    """Bad input: exit 2, one line on stderr naming the flag and value, nothing on stdout."""
    code = main(["tries", "--dag", "d", "--run", "r", "--task", "t", *argv])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "") and message in err


def test_without_an_airflow_api_it_exits_2(monkeypatch, capsys):
    """No --api-url and no AIRFLOW_CONN_RETRY_PROVIDER_AIRFLOW_API: exit 2 saying what is missing."""
    monkeypatch.delenv("AIRFLOW_CONN_RETRY_PROVIDER_AIRFLOW_API", raising=False)
    code = main(["tries", "--dag", "d", "--run", "r", "--task", "t"])
    _, err = capsys.readouterr()
    assert code == 2 and "api" in err.lower()
