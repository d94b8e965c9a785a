"""preload.py: loaded by Airflow in every process, it imports nothing itself; before a fork the parent
imports the failure path once, so the forked task process has it; off, the child has none of it."""

from __future__ import annotations

import os
import subprocess
import sys

FORK_AND_LOOK = """
import os, sys
import airflow.sdk.execution_time.task_runner  # as a worker has it: Airflow loaded the entry point
loaded_before = 'airflow_retry_provider.dlq.store' in sys.modules
pid = os.fork()
if pid == 0:
    os._exit(0 if 'airflow_retry_provider.dlq.store' in sys.modules else 3)
_, status = os.waitpid(pid, 0)
print('airflow_retry_provider.preload' in sys.modules, loaded_before, os.waitstatus_to_exitcode(status))
"""


def fork_and_look(**env: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", FORK_AND_LOOK],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **env},
    ).stdout
    return out.strip().splitlines()[-1].split()


def test_airflow_loads_it_everywhere_and_the_first_fork_hands_the_failure_path_to_the_child():
    """Loaded by the ``airflow.policy`` entry point, nothing imported until the fork, then the child has the store."""
    assert fork_and_look() == ["True", "False", "0"]


def test_off_the_child_imports_the_failure_path_itself():
    """``[retry_provider] preload_failure_path = false``: the fork hands nothing over."""
    assert fork_and_look(AIRFLOW__RETRY_PROVIDER__PRELOAD_FAILURE_PATH="false") == ["True", "False", "3"]


FORK_AND_COUNT = """
import os, sys
import airflow.sdk.execution_time.task_runner
pid = os.fork()
if pid == 0:
    from airflow_retry_provider.policy import engine, redact
    pending = sum(1 for declared in list(engine._DECLARED.values()) if declared._compiled is None)
    redact("curl -u etl:S3cr3t!x https://x/y?token=abc123def456ghi789 password=hunter2x")
    compiled = sum(1 for declared in list(engine._DECLARED.values()) if declared._compiled is not None)
    notifier = 'airflow.providers.smtp.notifications.smtp' in sys.modules
    print(pending, compiled > 100, notifier, flush=True)
    os._exit(0)
os.waitpid(pid, 0)
"""


def test_the_fork_hands_the_child_every_pattern_compiled_and_the_notifiers_imported():
    """Before the fork the parent compiled every pattern and literal set and imported the configured
    notifiers' classes: the child's failed try compiles nothing and imports no notifier."""
    notifiers = (
        '[{"class": "airflow.providers.smtp.notifications.smtp.SmtpNotifier", "kwargs": {"to": "x@y.z"}}]'
    )
    out = subprocess.run(
        [sys.executable, "-c", FORK_AND_COUNT],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "AIRFLOW__RETRY_PROVIDER__ALERT_NOTIFIERS": notifiers},
    ).stdout
    assert out.strip().splitlines()[-1].split() == ["0", "True", "True"]
