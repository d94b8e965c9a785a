"""DAGs under the ``report`` and ``dashboard`` profiles with their real backoff, for ``testing_delays``.

``tests/dags/test_testing_delays.py`` runs them with ``dag.test()`` inside ``testing_delays()``: the
retried task must succeed at its second try in seconds, its retry decided exactly as without the switch.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, task

from airflow_retry_provider import apply_profile


def _profile_dag(profile: str) -> DAG:
    """``testing_delays_<profile>``: triggered by hand, every task retried under ``profile``."""
    return DAG(
        dag_id=f"testing_delays_{profile}",
        schedule=None,
        start_date=pendulum.datetime(2026, 11, 1, tz="America/Sao_Paulo"),
        catchup=False,
        tags=["test"],
        default_args=apply_profile({}, profile),
    )


def _fails_once(ti=None) -> int:
    """The first try loses its connection (retryable: the profile's backoff); the second succeeds."""
    if ti.try_number < 2:
        raise ConnectionResetError(104, "Connection reset by peer")
    return ti.try_number


with _profile_dag("report") as report_dag:  # 3 attempts, a 5-minute backoff

    @task
    def poison() -> None:
        """Poison: a dead letter at the first try, whatever the switch."""
        raise PermissionError("permission denied for table positions")

    task(_fails_once, task_id="flaky")()
    poison()


with _profile_dag("dashboard") as dashboard_dag:  # 2 attempts
    task(_fails_once, task_id="refresh")()
