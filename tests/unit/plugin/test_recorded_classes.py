"""The Retries tab's classes of tries no exception explained, and which tries spent an attempt (issue 57)."""

from __future__ import annotations

from typing import Any

from airflow_retry_provider.dlq import FailedTry
from airflow_retry_provider.plugin.queries import infra_allowance, with_recorded_classes
from airflow_retry_provider.policy import DEFAULT_INFRA_ALLOWANCE
from airflow_retry_provider.policy.profiles import get_profile
from airflow_retry_provider.policy.tries import parse_reason


def _try(number: int, state: str, reason: str | None = None) -> dict[str, Any]:
    return {
        "try_number": number,
        "state": state,
        "reason": reason,
        "decision": parse_reason(reason).to_json(),
        "source": "airflow" if reason else None,
    }


def _recorded(number: int, failure_class: str, category: str, host: str | None = "node-7") -> FailedTry:
    return FailedTry("d", "r", "t", -1, number, failure_class, category, host)


RETRY = (
    "[attempt 1/2] [after 2026-12-05T10:00:00Z] [rule http-5xx] [profile dashboard] retryable/http-5xx: 503"
)


def test_killed_tries_within_the_allowance_spend_no_attempt_and_show_the_recorded_class():
    """Two kills (allowance 2) spend nothing, the code's failure spends one, a third kill one, the success one."""
    tries = [_try(1, "up_for_retry"), _try(2, "up_for_retry"), _try(3, "up_for_retry", RETRY)]
    tries += [_try(4, "failed"), _try(5, "success")]
    recorded = [_recorded(1, "infra", "killed"), _recorded(2, "infra", "oom-killed")]
    recorded += [_recorded(3, "retryable", "http-5xx"), _recorded(4, "infra", "terminated")]
    shown = with_recorded_classes(tries, recorded, allowance=2)
    assert [t["spent_attempt"] for t in shown] == [False, False, True, True, True]
    assert [(t["decision"]["failure_class"], t["decision"]["category"]) for t in shown] == [
        ("infra", "killed"),
        ("infra", "oom-killed"),
        ("retryable", "http-5xx"),
        ("infra", "terminated"),
        (None, None),
    ]
    assert [t["source"] for t in shown] == ["provider", "provider", "airflow", "provider", None]
    assert shown[0]["hostname"] == "node-7" and shown[4]["hostname"] is None


def test_airflows_reason_wins_over_the_recorded_row():
    """A try whose reason Airflow kept keeps its class and source, whatever the row says."""
    (shown,) = with_recorded_classes(
        [_try(1, "up_for_retry", RETRY)], [_recorded(1, "unknown", "x")], allowance=0
    )
    assert (shown["decision"]["category"], shown["source"], shown["spent_attempt"]) == (
        "http-5xx",
        "airflow",
        True,
    )


def test_a_try_nobody_recorded_yet_is_unknown_not_spent():
    """A failed try the watcher has not read yet says nothing: neither spent nor free."""
    (shown,) = with_recorded_classes([_try(1, "up_for_retry")], [], allowance=2)
    assert (shown["spent_attempt"], shown["decision"]["failure_class"], shown["source"]) == (None, None, None)


def test_the_allowance_is_the_named_profiles_or_the_default():
    """The latest reason naming a known profile gives its infra_allowance; none gives the default."""
    assert infra_allowance([_try(1, "up_for_retry")]) == DEFAULT_INFRA_ALLOWANCE
    assert infra_allowance([_try(1, "up_for_retry", RETRY)]) == get_profile("dashboard").infra_allowance
    unknown = RETRY.replace("dashboard", "no-such-profile")
    assert infra_allowance([_try(1, "up_for_retry", unknown)]) == DEFAULT_INFRA_ALLOWANCE


def test_the_kill_switch_makes_the_allowance_0_as_the_workers_count_it(monkeypatch):
    """With [retry_provider] infra_allowance_enabled off, every killed try shows as an attempt spent."""
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__INFRA_ALLOWANCE_ENABLED", "false")
    assert infra_allowance([_try(1, "up_for_retry", RETRY)]) == 0
