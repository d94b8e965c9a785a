"""Benchmark: what the provider's plugin adds to the start of every task process, beside what Airflow's
task SDK costs there.

Run: .venv/bin/python bench/task_process.py   (prints each figure, its budget and OK or MISSED)
Every task process, successful or not, loads every installed plugin at its start: the task runner
looks for their listeners (``airflow.sdk.listener.get_listener_manager``). Until issue 58's storm
profile the provider's plugin built its whole app there (FastAPI's routes, Airflow's API security,
the pages); now it builds it when Airflow reads ``fastapi_apps``, which only the api-server does.
Each figure is the CPU (user and system) of one step in a fresh process, the median of
:data:`ROUNDS`: ``import airflow.sdk`` (the anchor: what a task process imports anyway), the task
runner's loading of every plugin, the provider's plugin module alone (budget: <= 20 ms, the budget
of what a DAG file imports, bench/policy.py), and what building the app costs, which each task
process paid before.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
from typing import NamedTuple

from verdict import exit_code, judge

ROUNDS = 5
PLUGIN_BUDGET_MS = 20.0


class Step(NamedTuple):
    """One figure: the ``code`` timed in a fresh interpreter after its untimed ``setup``."""

    name: str
    setup: str
    code: str


STEPS = (
    Step("import airflow.sdk", "", "import airflow.sdk"),
    Step(
        "the task runner loads every plugin",
        "import airflow.sdk",
        "from airflow.sdk.listener import get_listener_manager\nget_listener_manager()",
    ),
    Step(
        "the provider's plugin module",
        "import airflow.sdk\nimport airflow.plugins_manager",
        "import airflow_retry_provider.plugin",
    ),
    Step(
        "building its app (each task, before)",
        "import airflow.sdk\nimport airflow_retry_provider.plugin",
        "from airflow_retry_provider.plugin import RetryProviderPlugin\nRetryProviderPlugin.fastapi_apps",
    ),
)


def cpu_ms(setup: str, step: str) -> float:
    """The CPU milliseconds ``step`` costs in a fresh interpreter, after ``setup``."""
    script = (
        "import resource\n"
        f"{setup}\n"
        "def cpu():\n"
        "    usage = resource.getrusage(resource.RUSAGE_SELF)\n"
        "    return usage.ru_utime + usage.ru_stime\n"
        "before = cpu()\n"
        f"{step}\n"
        "print((cpu() - before) * 1000)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300
    )
    return float(out.stdout.strip().splitlines()[-1])


def main(rounds: int = ROUNDS) -> int:
    figures = {}
    for step in STEPS:
        samples = [cpu_ms(step.setup, step.code) for _ in range(rounds)]
        figures[step.name] = statistics.median(samples)
        print(
            f"{step.name:<40} {figures[step.name]:8.1f} ms CPU (median of {rounds}: {', '.join(f'{s:.0f}' for s in samples)})"
        )
    plugin = figures["the provider's plugin module"]
    print(
        f"the provider's plugin adds {plugin:.1f} ms to a task process's start, beside "
        f"{figures['import airflow.sdk']:.0f} ms for import airflow.sdk "
        f"(budget <= {PLUGIN_BUDGET_MS:.0f} ms): {judge('plugin in a task process', plugin <= PLUGIN_BUDGET_MS)}"
    )
    print(
        f"building the app there cost each task process {figures['building its app (each task, before)']:.0f} ms "
        "before issue 58's change"
    )
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
