"""bench/policy.py prints the decision's p95 beside Airflow's own policy and judges it against 100 us."""

from __future__ import annotations

from tests.unit.bench_modules import import_bench


def test_the_decision_is_printed_beside_the_anchor_with_its_verdict(capsys, monkeypatch):
    """One run: the anchor's line, each round's p95, the ratio to the anchor and a verdict against 100 us."""
    (bench,) = import_bench("policy")
    timed = bench.per_call_us
    monkeypatch.setattr(bench, "per_call_us", lambda call: timed(call, 200))  # the shape, not the figure
    bench.evaluate_figures(rounds=2)
    out = capsys.readouterr().out
    assert "anchor: Airflow's ExceptionRetryPolicy" in out
    assert "p95 by round:" in out
    assert "x the anchor's" in out
    assert "budget <= 100 us: OK" in out or "budget <= 100 us: MISSED" in out
    assert "of which classify():" in out
