"""bench/corpus.py judges each corpus of tests/data: entries held, the share, and each failure."""

from __future__ import annotations

from tests.unit.bench_modules import import_bench


def test_a_leak_and_a_lost_keep_are_failures_a_held_entry_is_not() -> None:
    """An entry whose secret survives or whose keep string is hidden is listed; one that holds is not."""
    (bench,) = import_bench("corpus")
    held = {
        "tool": "held",
        "family": "x",
        "message": "password=hunter2, host=db",
        "secrets": ["hunter2"],
        "keep": ["host=db"],
    }
    leaked = {"tool": "leaked", "family": "x", "message": "value hunter2", "secrets": ["hunter2"], "keep": []}
    lost = {"tool": "lost", "family": "x", "message": "password=hunter2", "secrets": [], "keep": ["hunter2"]}
    lines = bench.failures([held, leaked, lost])
    assert len(lines) == 2
    assert "leaked [x]: leaked=['hunter2']" in lines[0]
    assert "lost [x]: leaked=[] lost=['hunter2']" in lines[1]


def test_every_corpus_present_meets_its_target(capsys) -> None:
    """Run over tests/data: each present corpus prints its count and an OK verdict, and the run exits 0."""
    (bench,) = import_bench("corpus")
    assert bench.main() == 0
    out = capsys.readouterr().out
    assert "leaks.yaml: " in out and "unseen.yaml: 200/200 held (100.0 %)" in out and "MISSED" not in out
    assert "holdout2.yaml: 100/100 held (100.0 %)" in out  # fitted in round three
    assert "holdout3.yaml: 100/100 held (100.0 %)" in out  # fitted in round four
    assert "holdout4a.yaml: 60/60 held (100.0 %)" in out  # 54/60 at first sight, fitted in round five
    assert "round5.yaml: 28/28 held (100.0 %)" in out  # holdout4a's neighbouring classes, round five
    assert "holdout4b.yaml: 59/60 held (98.3 %)" in out  # 52/60 at first sight, fitted in round six
    assert "holdout5.yaml: 54/60 held (90.0 %)" in out  # 45/60 at first sight, fitted in round seven
    assert (
        "holdout6.yaml: 59/60 held (98.3 %)" in out
    )  # 48/60 at first sight, fitted in round eight (OVH in sixteen)
    assert "holdout7.yaml: 59/60 held (98.3 %)" in out  # 56/60 at first sight, fitted in round nine
    assert "holdout8.yaml: 60/60 held (100.0 %)" in out  # 51/60 at first sight, fitted in round ten
    assert "holdout9.yaml: 59/60 held (98.3 %)" in out  # 52/60 at first sight, fitted in round eleven
    assert "holdout10.yaml: 57/60 held (95.0 %)" in out  # 49/60 at first sight, fitted in round twelve
    assert "holdout11.yaml: 58/60 held (96.7 %)" in out  # 50/60 at first sight, fitted in round thirteen
    assert "holdout12.yaml: 57/60 held (95.0 %)" in out  # 51/60 at first sight, fitted in round fourteen
    assert "holdout13.yaml: 55/60 held (91.7 %)" in out  # 51/60 at first sight, fitted in round fifteen
    assert "holdout14.yaml: 56/60 held (93.3 %)" in out  # 52/60 at first sight, fitted in round sixteen
    assert "holdout15.yaml: 58/60 held (96.7 %)" in out  # 55/60 at first sight, fitted in round sixteen
    assert "holdout16.yaml: 56/60 held (93.3 %)" in out  # 48/60 at first sight, fitted in round seventeen
    assert "holdout17.yaml: 59/60 held (98.3 %)" in out  # 52/60 at first sight, fitted in round eighteen
    assert "holdout18.yaml: 57/60 held (95.0 %)" in out  # 52/60 at first sight, fitted in round nineteen
    assert "holdout19.yaml: 59/60 held (98.3 %)" in out  # 56/60 at first sight, fitted in round twenty
    assert "holdout20.yaml: 58/60 held (96.7 %)" in out  # 50/60 at first sight, fitted in round twenty-one
    assert "holdout21.yaml: 57/60 held (95.0 %)" in out  # 52/60 at first sight, fitted in round twenty-two
    assert "holdout22.yaml: 53/60 held (88.3 %)" in out  # 44/60 at first sight, fitted in round twenty-three
    assert "holdout23.yaml: 60/60 held (100.0 %)" in out  # 54/60 at first sight, fitted in round twenty-four
    assert "holdout24.yaml: 55/60 held (91.7 %)" in out  # 50/60 at first sight, fitted in round twenty-five
    assert "holdout25.yaml: 58/60 held (96.7 %)" in out  # 52/60 at first sight, fitted in round twenty-six
    assert "holdout26.yaml: 54/60 held (90.0 %)" in out  # 47/60 at first sight, fitted in round twenty-seven
    assert "holdout27.yaml: 51/60 held (85.0 %)" in out  # 45/60 at first sight, fitted in round twenty-eight
    assert "holdout28.yaml: 54/60 held (90.0 %)" in out  # 48/60 at first sight, fitted in round twenty-nine
    assert "holdout29.yaml: 57/60 held (95.0 %)" in out  # 55/60 at first sight, fitted in round thirty
    assert "holdout30.yaml: 59/60 held (98.3 %)" in out  # 54/60 at first sight, fitted in round thirty-one
    assert "holdout31.yaml: 58/60 held (96.7 %)" in out  # 55/60 at first sight, fitted in round thirty-two
    assert "holdout32.yaml: 60/60 held (100.0 %)" in out  # 54/60 at first sight, fitted in round thirty-three
    assert "holdout33.yaml: 59/60 held (98.3 %)" in out  # 53/60 at first sight, fitted in round thirty-four
    assert "holdout34.yaml: 58/60 held (96.7 %)" in out  # 53/60 at first sight, fitted in round thirty-five
    assert "holdout35.yaml: 54/60 held (90.0 %)" in out  # 52/60 at first sight, fitted in round thirty-six
    assert "holdout36.yaml: 56/60 held (93.3 %)" in out  # 53/60 at first sight, fitted in round thirty-seven
    # measured, never fitted: the honest generalisation figure, printed beside the 97 % target
    assert "holdout37.yaml (held out, not fitted): 50/60 held (83.3 %)   target >= 97 % NOT REACHED" in out
    assert "Bitrix24 REST webhook [url path]" in out and "(known: " in out
