"""DAGs for the infra watcher's end-to-end proof (tests/e2e/test_infra_watch.py, issue 57)."""

from __future__ import annotations

from datetime import timedelta

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


def _kill_until(ti, kills: int) -> None:
    """SIGKILLs its own process on tries 1..``kills`` (as a node drain would), writing when; later tries succeed."""
    import os
    import signal
    import time
    from pathlib import Path

    folder = Path(os.environ["E2E_PID_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{ti.dag_id}-{ti.run_id}-{ti.try_number}").write_text(str(time.time()))
    if ti.try_number <= kills:
        os.kill(os.getpid(), signal.SIGKILL)


with _dag("infra_killed_twice_then_success"):

    @task
    def killed_twice(ti=None) -> None:
        """Killed on its first two tries, then succeeds: under the 2 attempts of ``dashboard``."""
        _kill_until(ti, 2)

    apply_profile(killed_twice(), "dashboard", backoff=FAST)


with _dag("infra_killed_twice_native"):

    @task(retries=1, retry_delay=timedelta(seconds=2))
    def killed_twice_native(ti=None) -> None:
        """The same task with Airflow's own retries=1 (2 tries) and no provider."""
        _kill_until(ti, 2)

    killed_twice_native()


with _dag("infra_code_fails_every_try"):

    @task
    def fails_every_try(ti=None) -> None:
        """Its own code fails retryable on every try: the infra allowance must not give it more tries."""
        _kill_until(ti, 0)
        raise ConnectionResetError(104, "Connection reset by peer")

    apply_profile(fails_every_try(), "dashboard", backoff=FAST)
