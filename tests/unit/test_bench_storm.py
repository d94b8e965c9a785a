"""bench/storm.py's shapes and table (no Airflow started): what it calls OK, MISSED and WRONG for each shape."""

from __future__ import annotations

import pytest

from tests.unit.bench_modules import import_bench


@pytest.fixture(scope="module")
def bench_modules():
    """storm and run_all, imported from bench/ (not a package)."""
    return import_bench("storm", "run_all")


def storms(storm, runs: int, letters: int, reads: int, at_risk: int):
    """A native and a provider storm of ``runs`` DAG runs, the provider's with these figures."""
    return [
        storm.Storm(
            "native", runs, 60.0, None, 0, 0, 0, 0, 80.0, 5, 0, 0, {"api-server": 20.0, "machine": 90.0}
        ),
        storm.Storm(
            "provider",
            runs,
            70.0,
            65.0,
            letters,
            letters,
            reads,
            2 * runs,  # the infra watcher's pages
            84.0,
            12,
            1,
            at_risk,
            {"api-server": 31.0, "machine": 120.0},
        ),
    ]


def verdicts(capsys, run_all) -> list[str]:
    return [word for word, _ in run_all.verdicts(capsys.readouterr().out)]


def test_the_shapes_name_each_variants_dags(bench_modules):
    """--tasks is one DAG per variant with that many letters; --dags is that many DAGs per variant, one letter each."""
    storm, _ = bench_modules
    mapped = storm.Shape.of(1000, None)
    assert mapped.dag_ids == {"native": ["storm_native"], "provider": ["storm_provider"]}
    assert (mapped.runs, mapped.letters) == (1, 1000)
    many = storm.Shape.of(None, 200)
    assert many.dag_ids["provider"][0] == "storm_provider_0000" and len(many.dag_ids["native"]) == 200
    assert (many.runs, many.letters) == (200, 200)
    assert storm.Shape.of(None, None).letters == 200  # the default: 200 mapped tasks


def test_one_run_is_held_to_one_read_per_20_letters(bench_modules, capsys):
    """A run of 1,000 letters read with 60 reads is over one per 20 (0.06): MISSED; 3 reads: OK."""
    storm, run_all = bench_modules
    shape = storm.Shape.of(1000, None)
    storm.report(storms(storm, 1, 1000, 3, 1), shape, 1)
    assert verdicts(capsys, run_all) == ["OK", "OK", "OK", "OK"]
    storm.report(storms(storm, 1, 1000, 60, 1), shape, 1)
    assert verdicts(capsys, run_all)[0] == "MISSED"


def test_runs_of_one_letter_are_held_to_one_set_of_reads_each(bench_modules, capsys):
    """200 runs of one letter: 600 reads (one set each) is OK, 800 MISSED; 200 at-risk mails are one per delivery."""
    storm, run_all = bench_modules
    shape = storm.Shape.of(None, 200)
    storm.report(storms(storm, 200, 200, 600, 200), shape, 1)
    out = capsys.readouterr().out
    assert (
        "REST reads per letter 3.000, per DAG run 3.00 (200 letters, 200 runs); "
        "with the infra watcher's calls 5.000 per letter" in out
    )
    cpu_rows = [line.split() for line in out.splitlines() if "CPU seconds" in line]
    assert cpu_rows == [
        ["CPU", "seconds:", "api-server", "20", "31"],
        ["CPU", "seconds:", "machine", "90", "120"],
    ]
    assert [word for word, _ in run_all.verdicts(out)] == ["OK", "OK", "OK", "OK"]
    storm.report(storms(storm, 200, 200, 800, 200), shape, 1)
    assert verdicts(capsys, run_all)[0] == "MISSED"
    storm.report(
        storms(storm, 200, 199, 600, 1), shape, 1
    )  # a letter lost, and one at-risk mail for 200 deliveries
    assert verdicts(capsys, run_all)[2:] == ["WRONG", "WRONG"]


def test_rounds_print_each_p95_and_the_native_storms_own_spread(bench_modules, capsys):
    """Two rounds: each round's p95 per variant, and how far the native p95 moved between its rounds (96/80)."""
    storm, _ = bench_modules
    first, second = storms(storm, 1, 1000, 3, 1), storms(storm, 1, 1000, 3, 1)
    second[0] = storm.Storm(**{**vars(second[0]), "p95_ms": 96.0})
    storm.report(first + second, storm.Shape.of(1000, None), 2)
    out = capsys.readouterr().out
    assert "GET /api/v2/dags p95 by round (ms): native 80, 96; provider 84, 84" in out
    assert "the native storm's p95 moved 1.20x between its own rounds" in out
    storm.report(first, storm.Shape.of(1000, None), 1)
    assert "by round" not in capsys.readouterr().out  # one round has no spread to show
