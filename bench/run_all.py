"""Run every benchmark under bench/ and write docs/BENCHMARKS.md (``make bench``).

Each benchmark prints its figures next to the anchor it measured in the same run (raw
PostgreSQL, Airflow's own policy, plain Python), the ratio and the target, and a verdict word per
target (``OK``, ``MISSED``, or ``WRONG`` for an exact count). This runner keeps that output
verbatim, one section per benchmark, with the machine it ran on, puts every verdict in a table at
the top, and exits non-zero when any target is MISSED, any invariant WRONG, or a benchmark fails.

``make bench ARGS="replay.py ui.py"`` reruns only the benchmarks named: their sections replace
the report's, the others stay as they were, and the verdict table is read again from every section.
"""

from __future__ import annotations

import os
import platform
import re
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

BENCH = Path(__file__).resolve().parent
HELPERS = {"run_all.py", "stacks.py", "verdict.py"}
VERDICT = re.compile(r"\b(OK|MISSED|WRONG)\b")
BAD = {"MISSED", "WRONG"}
REPORT = BENCH.parent / "docs" / "BENCHMARKS.md"
TARGETS = {
    "policy.py": "evaluate p95 <= 100 us with the full default rules, beside Airflow's ExceptionRetryPolicy; what a DAG file imports adds <= 20 ms (issue 42)",
    "dlq.py": "callback write p95 <= 2x raw insert; 10,000 letters by 8 processes, no duplicate; "
    "pages p95 <= 20 ms at 1,000,000 letters (issue: dead-letter queue)",
    "ledger.py": "claim + complete p95 <= 3x raw insert + commit (issue: execution controls)",
    "redact.py": "worst adversarial input of 1, 10 and 100 KB through redact and through classify + evaluate "
    "<= 5 ms of CPU, no secret kept (issue 30)",
    "corpus.py": "every message of tests/data/leaks.yaml, unseen.yaml, holdout.yaml and holdout2.yaml holds (no secret left, nothing "
    "readable lost; holdout_known_failures.yaml names any held-out entry that still fails, with its reason) (issue 54)",
    "reconcile.py": "whole report <= 10 s; one workspace <= 100 ms; health in SQL >= 10x Python (issue: reconciliation)",
    "distributed.py": "CeleryExecutor, 2 workers: drain <= 1.2x native retries; retry start lag within "
    "0.5 s of native; letters/s for 1,000 poison failures (issue 17)",
    "retention.py": "purge 1,000,000 old events; health query p95 during the purge <= 100 ms (issue: someone is told)",
    "replay.py": "clears per minute within 5% of the pace over 5 minutes with 3 concurrent jobs, never above it "
    "in any 60 s; time to the first clear; driver overhead per letter (issue 14)",
    "sweep.py": "one sweep at 100,000 open letters over 50 DAGs, beside the one-call-per-letter sweep: nothing changed "
    "<= 200 REST calls; 1,000 task instances changed <= 1,500 calls and <= 60 s; no page of a DAG's history (issues 25, 46)",
    "ui.py": "list page <= 300 ms, grouped view <= 1 s, p95 at 1,000,000 letters (issue: UI)",
    "drain.py": "200 mapped tasks failing once then succeeding, in one stack: policy only <= 1.02x plain "
    "Airflow, apply_profile <= 1.05x (issue 31)",
    "breaker.py": "an outage of one dependency under 100 task instances in 4 DAGs: with the breaker at most one "
    "failed try per task plus the probes, no letter, one down and one recovered alert, drain after recovery "
    "<= 1.5x a drain with no outage; without it, the same outage's letters and tries beside (issue 28)",
    "storm.py": "a storm of poison failures (mapped tasks of one DAG, or DAGs failing once each) beside the same "
    "storm without the provider: at most one REST read per 20 letters of a DAG run (a run of one letter: one set "
    "of reads); GET /api/v2/dags p95 within 10 % of the native storm's; every letter filed and every impact "
    "computed; one new-root-cause mail and one at-risk mail per delivery (issue 58)",
    "task_process.py": "the provider's plugin adds <= 20 ms of CPU to the start of every task process, beside "
    "import airflow.sdk; what building its app there cost each task before (issue 58)",
    "pages.py": "the letters page, its grouped view and the Deliveries view, HTML and JSON, p95 <= 1 s on a real "
    "api-server with 100,000 letters stored, quiet and during a storm of 200 mapped poison failures, beside "
    "Airflow's own GET /api/v2/dags (issue 58)",
    "infra.py": "mapped tasks SIGKILLed on tries 1-2 then successful: all success with 1 of 2 attempts spent under "
    "the dashboard profile, beside Airflow's own retries=1 (all failed); none past both budgets; a task killed on "
    "every try filed infra/killed within 60 s of its last kill, beside the sweeper's 12 minutes (issue 57)",
    "impact.py": "one poison failure in a chain whose last task delivers by a deadline: the delivery-at-risk mail "
    "within 10 s of the failure, naming the latest replay time, beside Airflow's own DeadlineAlert on the same "
    "run and instant, which fires only at the deadline (issue 48)",
}
# scripts run more than once, with these arguments (the same figures for each executor)
ARGUMENTS = {
    "distributed.py": [[], ["--executor", "local"]],
    "drain.py": [[], ["--executor", "celery"]],
    "storm.py": [[], ["--executor", "celery", "--tasks", "1000"], ["--executor", "celery", "--dags", "200"]],
}
# past this a benchmark is stopped, with the processes it started, and the run fails: never a hang
TIMEOUT_SECONDS = {
    "distributed.py": 3 * 3600.0,
    "drain.py": 2 * 3600.0,
    "breaker.py": 3600.0,
    "storm.py": 2 * 3600.0,  # each run: 1,000 failures of each variant on 16 slots, or 400 DAGs parsed
    "replay.py": 3600.0,  # the canary half replays two groups of 500 at 30/min: about 19 minutes
}
DEFAULT_TIMEOUT_SECONDS = 30 * 60.0


def bounded(command: list[str], timeout: float) -> tuple[int, str, str]:
    """Run ``command`` in its own process group: its exit code, stdout and stderr. Past ``timeout``
    the whole group is killed and stderr says so."""
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    ) as child:
        try:
            out, err = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            try:
                out, err = child.communicate(timeout=30)
            except subprocess.TimeoutExpired:  # a daemon it started still holds the pipes
                out, err = "", ""
            err += f"\nrun_all: stopped after {timeout:.0f} s: the benchmark did not finish"
        return child.returncode, out, err


def machine() -> list[str]:
    def run(*command: str) -> str:
        try:
            return subprocess.run(command, capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return "unknown"

    cpu = "unknown"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory = "unknown"
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        kib = int(meminfo.read_text().split("MemTotal:")[1].split()[0])
        memory = f"{kib / 1024 / 1024:.1f} GiB"
    sys.path.insert(0, str(BENCH.parent / "tools"))  # devstack: not in the wheel
    from devstack.postgres import find_binary

    return [
        f"- CPU: {cpu}, {os.cpu_count()} cores; memory {memory}",
        f"- load average when the run started: {os.getloadavg()[0]:.2f}",
        f"- {platform.platform()}; Python {platform.python_version()}",
        f"- Airflow {run(str(Path(sys.executable).with_name('airflow')), 'version')}; "
        f"{run(find_binary('postgres'), '--version')}",
    ]


def verdicts(output: str) -> list[tuple[str, str]]:
    """Every (verdict, line) a benchmark printed: the lines holding OK, MISSED or WRONG."""
    found = []
    for line in output.splitlines():
        words = VERDICT.findall(line)
        if words:
            found.append(
                ("MISSED" if "MISSED" in words else "WRONG" if "WRONG" in words else "OK", line.strip())
            )
    return found


def run(script: Path, arguments: list[str]) -> tuple[str, list[str], bool]:
    """Run one benchmark: its title, its report section, and whether it failed or missed a target."""
    title = " ".join([script.name, *arguments])
    print(f"== {title}", flush=True)
    began = time.monotonic()
    load = os.getloadavg()[0]
    when = datetime.now(timezone.utc)
    timeout = TIMEOUT_SECONDS.get(script.name, DEFAULT_TIMEOUT_SECONDS)
    code, out, err = bounded([sys.executable, str(script), *arguments], timeout)
    elapsed = time.monotonic() - began
    print(out, end="", flush=True)
    judged = verdicts(out)
    section = [f"## {title}", "", f"Target: {TARGETS.get(script.name, 'see the script')}.", ""]
    section += [f"Run on {when:%Y-%m-%d %H:%M} UTC, load average {load:.2f} at its start.", ""]
    section += ["```", out.rstrip(), "```", "", f"({elapsed:.0f} s, exit {code})", ""]
    if code != 0:
        section += ["Errors:", "", "```", err[-3000:].rstrip(), "```", ""]
        print(err[-3000:], file=sys.stderr)
    bad = code != 0 or not judged or any(word in BAD for word, _ in judged)
    return title, section, bad


def sections_of(report: str) -> dict[str, list[str]]:
    """The benchmark sections of a written report, by title (``## dlq.py``); Machine and Verdicts are not kept."""
    sections: dict[str, list[str]] = {}
    title = None
    for line in report.splitlines():
        if line.startswith("## "):
            title = line[3:].strip()
        if title is not None and title not in ("Machine", "Verdicts"):
            sections.setdefault(title, []).append(line)
    return sections


def replace_sections(kept: dict[str, list[str]], rerun: dict[str, list[str]]) -> dict[str, list[str]]:
    """``kept`` without any section of a script that was rerun (however it was run then), plus ``rerun``."""
    ran = {title.split()[0] for title in rerun}
    return {**{t: s for t, s in kept.items() if t.split()[0] not in ran}, **rerun}


def verdict_table(sections: dict[str, list[str]]) -> list[str]:
    """One row per judged line in each section's recorded output (the fenced blocks, not the prose)."""
    table = ["## Verdicts", "", "| benchmark | verdict | line |", "|---|---|---|"]
    for title, section in sorted(sections.items()):
        fenced, inside = [], False
        for line in section:
            if line.startswith("```"):
                inside = not inside
            elif inside:
                fenced.append(line)
        judged = verdicts("\n".join(fenced))
        table += [f"| {title} | {word} | `{line.replace('|', '/')}` |" for word, line in judged]
        if not judged:
            table.append(f"| {title} | NO VERDICT | the benchmark judged no target |")
    return table


def main(argv: list[str] | None = None) -> int:
    """Run every benchmark, or only those named (``run_all.py replay.py``): their sections replace the
    report's, the others are kept as they were, and the verdict table is read again from all of them."""
    names = sys.argv[1:] if argv is None else argv
    scripts = sorted(s for s in BENCH.glob("*.py") if s.name not in HELPERS)
    unknown = sorted(set(names) - {s.name for s in scripts})
    if unknown:
        print(f"run_all: no benchmark named {', '.join(unknown)} under {BENCH}", file=sys.stderr)
        return 2
    started = datetime.now(timezone.utc)
    written = "Written by `make bench`" if not names else f"Sections {', '.join(names)} rerun"
    lines = [
        "# Benchmarks",
        "",
        f"{written} on {started:%Y-%m-%d %H:%M} UTC. Each section is the benchmark's own output:",
        "every figure with the anchor measured in the same run, the ratio, and the target; each",
        "says when it ran. The verdicts below are read from every section's recorded output.",
        "",
        "## Machine",
        "",
        *machine(),
        "",
    ]
    failed = 0
    rerun: dict[str, list[str]] = {}
    for script in scripts:
        if names and script.name not in names:
            continue
        for arguments in ARGUMENTS.get(script.name, [[]]):
            title, section, bad = run(script, arguments)
            rerun[title] = section
            failed += bad
    # the report as it is now, not as it was when we started: another rerun may have written it meanwhile
    kept = replace_sections(sections_of(REPORT.read_text()) if names and REPORT.exists() else {}, rerun)
    sections = [line for _, section in sorted(kept.items()) for line in section]
    REPORT.write_text("\n".join([*lines, *verdict_table(kept), "", *sections]).rstrip() + "\n")
    print(f"wrote {REPORT}")
    if failed:
        print(f"{failed} benchmark(s) missed a target, broke an invariant or failed", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
