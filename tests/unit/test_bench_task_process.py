"""bench/task_process.py prints what the provider's plugin adds to a task process beside import airflow.sdk."""

from __future__ import annotations

from tests.unit.bench_modules import import_bench


def test_the_plugin_is_printed_beside_the_sdk_and_judged(capsys):
    """One round of each step in fresh processes: the anchor, the plugin's own figure (within its budget),
    and the app's build, which a task process no longer pays, costing far more than the module."""
    (bench,) = import_bench("task_process")
    bench.main(rounds=1)  # its exit code is shared with the other benchmarks this process imported
    out = capsys.readouterr().out
    assert "import airflow.sdk" in out and "the task runner loads every plugin" in out
    assert "(budget <= 20 ms): OK" in out
    figures = {
        line[:40].strip(): float(line[40:].split()[0])
        for line in out.splitlines()
        if " ms CPU (median" in line
    }
    assert figures["building its app (each task, before)"] > 10 * figures["the provider's plugin module"]
