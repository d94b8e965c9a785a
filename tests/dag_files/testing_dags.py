"""A DAG under the ``report`` profile with its real 5-minute backoff, for ``testing_delays``.

``tests/dags/test_testing_delays.py`` runs it with ``dag.test()`` inside ``testing_delays()``: the
retried task must succeed at its second try in seconds, its retry decided exactly as without the switch.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, task

from airflow_retry_provider import apply_profile

with DAG(
    dag_id="testing_delays_report",
    schedule=None,
    start_date=pendulum.datetime(2026, 11, 1, tz="America/Sao_Paulo"),
    catchup=False,
    tags=["test"],
    default_args=apply_profile({}, "report"),
) as report_dag:

    @task
    def flaky(ti=None) -> int:
        """The first try loses its connection (retryable, backoff 5 min); the second succeeds."""
        if ti.try_number < 2:
            raise ConnectionResetError(104, "Connection reset by peer")
        return ti.try_number

    @task
    def poison() -> None:
        """Poison: a dead letter at the first try, whatever the switch."""
        raise PermissionError("permission denied for table positions")

    flaky()
    poison()


with DAG(
    dag_id="testing_delays_dashboard",
    schedule=None,
    start_date=pendulum.datetime(2026, 11, 1, tz="America/Sao_Paulo"),
    catchup=False,
    tags=["test"],
    default_args=apply_profile({}, "dashboard"),
) as dashboard_dag:

    @task
    def refresh(ti=None) -> int:
        """Two attempts (dashboard): the first try loses its connection, the second succeeds."""
        if ti.try_number < 2:
            raise ConnectionResetError(104, "Connection reset by peer")
        return ti.try_number

    refresh()
