"""bench/policy.py's same-run comparison: the package at an earlier revision, imported beside this one."""

from __future__ import annotations

import pytest

from tests.unit.bench_modules import import_bench


@pytest.fixture(scope="module")
def bench():
    (policy,) = import_bench("policy")
    return policy


def test_the_package_at_a_revision_decides_as_that_revision(bench):
    """At HEAD, the copy under another name is a separate package that decides every bench shape as this one."""
    earlier = bench.package_at("HEAD")
    assert earlier is not None and earlier.__name__ == "arp_HEAD"
    from airflow_retry_provider import ClassifiedRetryPolicy

    copy = earlier.ClassifiedRetryPolicy("report", clock=lambda: bench.NOW)
    assert type(copy).__module__.startswith("arp_HEAD.")  # not this package's class
    ours = ClassifiedRetryPolicy("report", clock=lambda: bench.NOW)
    context = bench._context()
    for exc in bench._exceptions():
        mine, theirs = ours.evaluate(exc, 1, 2, context), copy.evaluate(exc, 1, 2, context)
        assert (theirs.action, theirs.retry_delay) == (mine.action, mine.retry_delay)
        assert theirs.reason == mine.reason


def test_a_revision_git_does_not_know_is_not_timed(bench, capsys):
    """An unknown revision: None, and one line saying so (the run goes on without it)."""
    assert bench.package_at("no-such-revision") is None
    assert "'no-such-revision' is not in this repository's git" in capsys.readouterr().out


def test_every_revision_timed_is_read_against_the_quickest(bench, capsys, monkeypatch):
    """Several revisions: one line each (with the day it was committed), an unknown one skipped,
    and this code's p95 read against the quickest of those timed."""
    timed = bench.per_call_us
    monkeypatch.setattr(bench, "per_call_us", lambda call: timed(call, 200))  # the shape, not the figure
    bench.evaluate_figures(rounds=2, against=("HEAD", "no-such-revision", "HEAD~0"))
    out = capsys.readouterr().out
    day = bench.committed("HEAD")
    assert len(day) == 10 and day[4] == "-"  # 2026-12-03
    assert f"the code at HEAD ({day}), in this run" in out
    assert f"the code at HEAD~0 ({day}), in this run" in out
    assert "'no-such-revision' is not in this repository's git" in out
    assert out.count("this code's p95 is") == 3  # each revision's share, and the quickest's
    assert "against every revision timed, the quickest was HEAD" in out
    assert bench.committed("no-such-revision") == "?"
