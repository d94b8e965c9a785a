"""Run every benchmark under bench/ and write docs/BENCHMARKS.md (``make bench``).

Each benchmark prints its figures next to the anchor it measured in the same run (raw
PostgreSQL, Airflow's own policy, plain Python), the ratio and the target; this runner keeps
that output verbatim, one section per benchmark, with the machine it ran on.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPORT = BENCH.parent / "docs" / "BENCHMARKS.md"
TARGETS = {
    "policy.py": "evaluate <= 3x Airflow's ExceptionRetryPolicy; import adds <= 50 ms (issue: classified retries)",
    "dlq.py": "callback write p95 <= 2x raw insert; 10,000 letters by 8 processes, no duplicate; "
    "pages p95 <= 20 ms at 1,000,000 letters (issue: dead-letter queue)",
    "ledger.py": "claim + complete p95 <= 3x raw insert + commit (issue: execution controls)",
    "reconcile.py": "whole report <= 10 s; one workspace <= 100 ms; health in SQL >= 10x Python (issue: reconciliation)",
    "ui.py": "list page <= 300 ms, grouped view <= 1 s, p95 at 1,000,000 letters (issue: UI)",
}


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
    from airflow_retry_provider.devstack.postgres import find_binary

    return [
        f"- CPU: {cpu}, {os.cpu_count()} cores; memory {memory}",
        f"- load average when the run started: {os.getloadavg()[0]:.2f}",
        f"- {platform.platform()}; Python {platform.python_version()}",
        f"- Airflow {run(str(Path(sys.executable).with_name('airflow')), 'version')}; "
        f"{run(find_binary('postgres'), '--version')}",
    ]


def main() -> int:
    started = datetime.now(timezone.utc)
    lines = [
        "# Benchmarks",
        "",
        f"Written by `make bench` on {started:%Y-%m-%d %H:%M} UTC. Each section is the benchmark's own",
        "output: every figure with the anchor measured in the same run, the ratio, and the target.",
        "",
        "## Machine",
        "",
        *machine(),
        "",
    ]
    failed = 0
    for script in sorted(BENCH.glob("*.py")):
        if script.name == Path(__file__).name:
            continue
        print(f"== {script.name}", flush=True)
        began = time.monotonic()
        result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
        elapsed = time.monotonic() - began
        print(result.stdout, end="", flush=True)
        lines += [f"## {script.name}", "", f"Target: {TARGETS.get(script.name, 'see the script')}.", ""]
        lines += [
            "```",
            result.stdout.rstrip(),
            "```",
            "",
            f"({elapsed:.0f} s, exit {result.returncode})",
            "",
        ]
        if result.returncode != 0:
            failed += 1
            lines += ["Errors:", "", "```", result.stderr[-3000:].rstrip(), "```", ""]
            print(result.stderr[-3000:], file=sys.stderr)
    REPORT.write_text("\n".join(lines))
    print(f"wrote {REPORT}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
