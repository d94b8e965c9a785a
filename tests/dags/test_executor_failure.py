"""A worker lost mid-task: the executor reports ``failed`` and Airflow's scheduler gives the task its next try.

The scheduler's own code (``SchedulerJobRunner.process_executor_events``, the step a scheduler runs on
each executor event) on the metadata database, for a task under ``apply_profile`` (so with the
provider's failure callback): the path every task takes when its worker dies or cannot reach the
api-server, as ``tests/e2e/test_distributed.py`` does when it kills the api-server mid-replay.

On Airflow 3.4.0b2 this path crashes the scheduler (``UniqueViolation`` on
``task_instance_current_key``): the callback request is stored through a session of its own, which
is the scheduler's thread-local session, so storing it commits and closes that session and detaches
the task instance; ``prepare_db_for_next_try`` then inserts the next try's row without archiving the
detached one. The test is a strict ``xfail`` on 3.4: when a 3.4 release fixes it, it passes and the
3.4 lane fails, to say so; then add ``tests/e2e/test_distributed.py`` and the whole of
``tests/e2e/test_storm.py`` to ``ARGS34`` (CONTRIBUTING.md).
"""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy.exc import IntegrityError

from airflow_retry_provider.airflow_compat import one_row_per_try
from tests.conftest import metadata_dsn, task_tries
from tests.dag_files.dlq_dags import fix_dag

pytestmark = pytest.mark.dags


@pytest.mark.xfail(
    one_row_per_try(),  # every 3.4 until a release fixes it: then this passes and fails the lane (strict)
    strict=True,
    raises=IntegrityError,  # that crash only: any other failure fails the test
    reason="Airflow 3.4.0b2: a failed executor event for a task with a failure callback crashes the scheduler",
)
def test_an_executor_failed_event_moves_a_running_task_to_its_next_try(airflow_db, provider_conn):
    """A running try whose executor reports ``failed`` ends up_for_retry with a try 2 to come; the scheduler survives."""
    from airflow.callbacks.database_callback_sink import DatabaseCallbackSink
    from airflow.executors.local_executor import LocalExecutor
    from airflow.jobs.scheduler_job_runner import SchedulerJobRunner
    from airflow.models.dagbag import DBDagBag
    from airflow.utils.session import create_session
    from airflow.utils.state import TaskInstanceState

    run = fix_dag.test(mark_success_pattern=".*")  # the DAG stored and one run, no task executed
    (ti,) = run.get_task_instances()
    with psycopg.connect(metadata_dsn()) as conn:  # as a worker leaves it when it dies mid-task
        conn.execute(
            "UPDATE task_instance SET state = 'running', end_date = NULL, queued_by_job_id = NULL "
            "WHERE id = %s",
            (ti.id,),
        )
    executor = LocalExecutor()
    executor.callback_sink = DatabaseCallbackSink()
    executor.fail(executor.get_task_key(ti) if one_row_per_try() else ti.key)  # 3.4 keys events by try id
    with create_session() as session:  # as the scheduler's loop calls it
        SchedulerJobRunner.process_executor_events(
            executor=executor, job_id=None, scheduler_dag_bag=DBDagBag(), session=session
        )

    tries = [
        (number, state) for number, state, *_ in task_tries(fix_dag.dag_id, run.run_id, "load_positions")
    ]
    if one_row_per_try():  # 3.4: try 1 archived as failed, try 2's row created up_for_retry
        assert tries == [(1, TaskInstanceState.FAILED), (2, TaskInstanceState.UP_FOR_RETRY)], tries
    else:  # 3.3: one row, up_for_retry; its try number moves on when the retry is scheduled
        assert tries == [(1, TaskInstanceState.UP_FOR_RETRY)], tries
