"""The benchmarks' verdicts: every target judged OK or MISSED, exact counts OK or WRONG, and make bench fails on either."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=BENCH, capture_output=True, text=True, timeout=60)


def test_a_missed_target_or_a_wrong_count_makes_the_benchmark_exit_non_zero():
    """judge() and check() print their word, and exit_code() is 1 after a MISSED or a WRONG, 0 otherwise."""
    met = _run(
        "from verdict import judge, check, exit_code; print(judge('a', True), check('b', True)); exit(exit_code())"
    )
    assert (met.returncode, met.stdout) == (0, "OK OK\n")
    for call, word in (
        ("judge('p95 <= 20 ms', False)", "MISSED"),
        ("check('one row per letter', False)", "WRONG"),
    ):
        bad = _run(f"from verdict import judge, check, exit_code; print({call}); exit(exit_code())")
        assert (bad.returncode, bad.stdout) == (1, f"{word}\n"), bad
        assert "not met:" in bad.stderr


def test_run_all_reads_every_verdict_and_flags_the_bad_ones():
    """run_all.verdicts() finds each judged line; a MISSED or WRONG line is reported as such, an unjudged line not at all."""
    sys.path.insert(0, str(BENCH))
    try:
        import run_all
    finally:
        sys.path.remove(str(BENCH))
    output = "ratio 1.2x (target <= 2x: OK)\nrows 9,999 (WRONG: expected exactly 10,000)\np95 31 ms MISSED\nplain figure 3 ms\n"
    assert run_all.verdicts(output) == [
        ("OK", "ratio 1.2x (target <= 2x: OK)"),
        ("WRONG", "rows 9,999 (WRONG: expected exactly 10,000)"),
        ("MISSED", "p95 31 ms MISSED"),
    ]
    assert {word for word, _ in run_all.verdicts(output)} & run_all.BAD == {"WRONG", "MISSED"}
