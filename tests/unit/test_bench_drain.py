"""bench/drain.py's order and table, and run_all's merge of a rerun into the report (no Airflow started)."""

from __future__ import annotations

import pytest

from tests.unit.bench_modules import import_bench


@pytest.fixture(scope="module")
def bench_modules():
    """drain and run_all, imported from bench/ (not a package)."""
    return import_bench("drain", "run_all")


def test_variants_alternate_one_of_each_per_round(bench_modules):
    """Runs go 1, 2, 3, 4, 1, 2, 3, 4: no variant runs twice in a row, each runs once per round."""
    drain, _ = bench_modules
    assert drain.order_of(2) == ["plain", "import", "policy", "profile"] * 2


def test_the_table_judges_policy_and_profile_against_plain_airflow(bench_modules):
    """The ratios are to plain Airflow's mean; policy only is held to 1.02x, apply_profile to 1.05x, and run_all reads both."""
    drain, run_all = bench_modules
    drains = {
        "plain": [100.0, 100.0],
        "import": [99.0, 101.0],
        "policy": [101.0, 103.0],
        "profile": [104.0, 108.0],
    }
    lines = drain.report(drains, 200, 2, "local")
    assert lines[0].startswith("200 mapped tasks failing once") and "mean of 2 run(s)" in lines[0]
    assert [word for word, _ in run_all.verdicts("\n".join(lines))] == ["OK", "MISSED"]
    assert "1.02x  target <= 1.02x  OK" in lines[4]  # 102 / 100: at the target is within it
    assert "1.06x  target <= 1.05x  MISSED" in lines[5]


def test_a_rerun_replaces_only_its_own_sections(bench_modules):
    """Every section of a rerun script goes (both executors), the rerun's come in, other scripts' stay as they are now."""
    _, run_all = bench_modules
    kept = {
        "drain.py": ["## drain.py", "old"],
        "drain.py --executor celery": ["## drain.py --executor celery", "old"],
        "policy.py": ["## policy.py", "written by another rerun meanwhile"],
    }
    rerun = {"drain.py": ["## drain.py", "new"]}
    assert run_all.replace_sections(kept, rerun) == {
        "policy.py": ["## policy.py", "written by another rerun meanwhile"],
        "drain.py": ["## drain.py", "new"],
    }
