"""DAGs for the infra watcher's end-to-end proof (tests/e2e/test_infra_watch.py, issue 57)."""

from __future__ import annotations

from airflow.sdk import task
from scenario_parts import FAST, _dag  # the bundle folder is on sys.path

from airflow_retry_provider import apply_profile

with _dag("infra_killed_every_try"):

    @task
    def killed_every_try(ti=None) -> None:
        """Writes when it kills itself, then SIGKILLs its own process: every try, as the OOM killer would."""
        import os
        import signal
        import time
        from pathlib import Path

        folder = Path(os.environ["E2E_PID_DIR"])
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"infra-killed-{ti.run_id}-{ti.try_number}").write_text(str(time.time()))
        os.kill(os.getpid(), signal.SIGKILL)

    apply_profile(killed_every_try(), "dashboard", backoff=FAST)
