"""The benchmarks' verdicts: every target judged OK or MISSED, exact counts OK or WRONG, and make bench fails on either."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tests.unit.bench_modules import BENCH, import_bench


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=BENCH, capture_output=True, text=True, timeout=60)


def _run_all():
    (run_all,) = import_bench("run_all")
    return run_all


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
    run_all = _run_all()
    output = "ratio 1.2x (target <= 2x: OK)\nrows 9,999 (WRONG: expected exactly 10,000)\np95 31 ms MISSED\nplain figure 3 ms\n"
    assert run_all.verdicts(output) == [
        ("OK", "ratio 1.2x (target <= 2x: OK)"),
        ("WRONG", "rows 9,999 (WRONG: expected exactly 10,000)"),
        ("MISSED", "p95 31 ms MISSED"),
    ]
    assert {word for word, _ in run_all.verdicts(output)} & run_all.BAD == {"WRONG", "MISSED"}


REPORT = """# Benchmarks

## Machine

- CPU: anything

## Verdicts

| benchmark | verdict | line |
|---|---|---|
| old.py | OK | `stale row` |

## a.py

Prose that says MISSED outside the recorded output is not a verdict.

```
p95 3 ms (target <= 20 ms: OK)
```

## b.py --executor local

### first part

```
lag +0.7 s  target <= +0.5 s  MISSED
```

```
one letter per failure: OK
```
"""


def test_a_rerun_keeps_the_other_sections_and_reads_every_verdict_again_from_their_output():
    """The sections of a written report come back by title, and the table is rebuilt from their fenced output only."""
    run_all = _run_all()
    sections = run_all.sections_of(REPORT)
    assert list(sections) == ["a.py", "b.py --executor local"]
    assert sections["b.py --executor local"][2] == "### first part"
    assert run_all.verdict_table(sections)[4:] == [
        "| a.py | OK | `p95 3 ms (target <= 20 ms: OK)` |",
        "| b.py --executor local | MISSED | `lag +0.7 s  target <= +0.5 s  MISSED` |",
        "| b.py --executor local | OK | `one letter per failure: OK` |",
    ]
    assert run_all.verdict_table({"c.py": ["## c.py", "```", "plain figure", "```"]})[4:] == [
        "| c.py | NO VERDICT | the benchmark judged no target |"
    ]


def test_naming_a_benchmark_that_does_not_exist_is_refused_before_anything_runs():
    """run_all.py nope.py exits 2 naming it, and leaves docs/BENCHMARKS.md as it was."""
    report = BENCH.parent / "docs" / "BENCHMARKS.md"
    before = report.read_text()
    answer = subprocess.run(
        [sys.executable, str(BENCH / "run_all.py"), "nope.py"], capture_output=True, text=True, timeout=60
    )
    assert (answer.returncode, answer.stdout) == (2, "")
    assert "no benchmark named nope.py" in answer.stderr
    assert report.read_text() == before


def test_a_benchmark_past_its_timeout_is_stopped_with_what_it_started(tmp_path):
    """bounded() kills the benchmark's whole process group at the timeout and says so: make bench never hangs."""
    run_all = _run_all()
    child_pid = tmp_path / "child.pid"
    script = (
        "import subprocess, sys, time; "
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
        f"open({str(child_pid)!r}, 'w').write(str(child.pid)); print('started', flush=True); time.sleep(600)"
    )
    began = time.monotonic()
    code, out, err = run_all.bounded([sys.executable, "-c", script], timeout=3)
    assert time.monotonic() - began < 60
    assert (code, out) == (-9, "started\n")
    assert "stopped after 3 s" in err
    pid = int(child_pid.read_text())
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid), "the benchmark's own child outlived it"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"
