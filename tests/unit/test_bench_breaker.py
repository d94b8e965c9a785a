"""bench/breaker.py's table and verdicts (no Airflow started): what it calls OK, MISSED and WRONG."""

from __future__ import annotations

import pytest

from tests.unit.bench_modules import import_bench


@pytest.fixture(scope="module")
def modules():
    """breaker and run_all, imported from bench/ (not a package)."""
    return import_bench("breaker", "run_all")


def _result(name: str, **figures) -> dict:
    base = {
        "name": name,
        "tasks": 100,
        "succeeded": 100,
        "failed_tasks": 0,
        "failed_tries": 0,
        "max_failed_tries": 0,
        "calls": 100,
        "letters": 0,
        "down": 0,
        "recovered": 0,
        "other_alerts": 0,
        "probes": 0,
        "drain": 50.0,
        "after_recovery": None,
    }
    return {**base, **figures}


def _results(**breaker_figures) -> dict:
    return {
        "anchor": _result("anchor"),
        "breaker": _result(
            "breaker",
            **{
                "failed_tries": 30,
                "probes": 4,
                "down": 1,
                "recovered": 1,
                "after_recovery": 60.0,
                **breaker_figures,
            },
        ),
        "profile": _result("profile", letters=33, failed_tries=182, failed_tasks=33, after_recovery=30.0),
        "native": _result("native", failed_tries=180, failed_tasks=32, after_recovery=30.0),
    }


def test_an_outage_held_within_every_target_is_five_oks(modules):
    """One try per task at most, no letter, one alert each way, 1.2x the anchor's drain: every verdict OK."""
    breaker, run_all = modules
    lines = breaker.report(_results(), 25, 60)
    assert [word for word, _ in run_all.verdicts("\n".join(lines))] == ["OK"] * 5
    assert any("33 letters, 182 failed tries" in line for line in lines)


@pytest.mark.parametrize(
    ("figures", "verdicts"),
    [
        # a second recovered alert for one outage is a wrong count, not a slow figure
        ({"recovered": 2}, ["OK", "OK", "OK", "WRONG", "OK"]),
        # one letter while the outage was shorter than max_hold
        ({"letters": 1}, ["OK", "OK", "WRONG", "OK", "OK"]),
        # more failed tries than one per task plus the probes
        ({"failed_tries": 105}, ["OK", "MISSED", "OK", "OK", "OK"]),
        # the drain after recovery past 1.5x the no-outage drain (50 s)
        ({"after_recovery": 76.0}, ["OK", "OK", "OK", "OK", "MISSED"]),
        # held tasks started within 30 s of the close: a sixth verdict, OK
        ({"last_start_after_close": 12.0}, ["OK", "OK", "OK", "OK", "OK", "OK"]),
        # the last held task waited a cool-down of its own after the close (the 121 s)
        ({"last_start_after_close": 121.0}, ["OK", "OK", "OK", "OK", "OK", "MISSED"]),
    ],
)
def test_each_target_fails_on_its_own_figure(modules, figures, verdicts):
    """Each figure past its target turns exactly its own verdict."""
    breaker, run_all = modules
    lines = breaker.report(_results(**figures), 25, 60)
    assert [word for word, _ in run_all.verdicts("\n".join(lines))] == verdicts
