"""Remote jobs on a real job service (a PostgreSQL table): no second id, errors classified, warnings validated."""

from __future__ import annotations

import psycopg
import pytest

from airflow_retry_provider.identity import make_remote_job_id, make_work_unit_key
from airflow_retry_provider.operators.remote_jobs import (
    REMOTE_JOB_RULES,
    RemoteJobFailed,
    ValidationRequired,
    is_duplicate_error,
)
from airflow_retry_provider.policy import classify
from tests.dag_files import execution_dags

pytestmark = pytest.mark.dags


@pytest.fixture
def job_service(airflow_db, provider_conn) -> str:
    """The job service's table in a fresh provider database."""
    with psycopg.connect(provider_conn) as conn:
        conn.execute(execution_dags.JOB_SERVICE_SQL)
    return provider_conn


def _jobs(dsn: str) -> dict[str, tuple]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT job_id, submitted_by, refused, outcome FROM test_job_service").fetchall()
    return {row[0]: row[1:] for row in rows}


def _letters(dsn: str) -> dict[str, tuple]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT task_id, failure_class, category, attempts_used FROM retry_dead_letters")
        return {row[0]: row[1:] for row in rows.fetchall()}


def test_duplicate_submit_looks_up_the_existing_job(job_service):
    """A job already submitted under the deterministic id is looked up and awaited, never resubmitted."""
    run = execution_dags.duplicate_dag.test()
    tis = {ti.task_id: ti for ti in run.get_task_instances()}
    assert tis["submit"].state == "success" and tis["submit"].try_number == 1
    key = make_work_unit_key(
        "remote_job_duplicate", "submit", -1, run.data_interval_start, run.data_interval_end, run.run_id
    )
    job_id = make_remote_job_id(key, execution_dags.JOB_PREFIX)
    assert _jobs(job_service) == {job_id: ("dead-worker", 1, "succeeded")}
    assert tis["submit"].xcom_pull(task_ids="submit") == {"rows": 7}  # the existing job's result


def test_finished_with_error_fails_classified_and_warnings_need_validation(job_service):
    """A failed job is a poison failure by its remote error; warnings fail without a validator and pass with one."""
    run = execution_dags.outcomes_dag.test()
    states = {ti.task_id: (ti.state, ti.try_number) for ti in run.get_task_instances()}
    assert states == {
        "failed_job": ("failed", 1),
        "warned_job": ("failed", 1),
        "validated_job": ("success", 1),
    }
    assert _letters(job_service) == {
        "failed_job": ("poison", "not-found", 1),
        "warned_job": ("poison", "needs-validation", 1),
    }
    validated = next(ti for ti in run.get_task_instances() if ti.task_id == "validated_job")
    assert validated.xcom_pull(task_ids="validated_job") == {
        "result": {"rows": 10},
        "accepted_warnings": ["row 4: amount is null"],
    }
    assert {outcome for _, _, outcome in _jobs(job_service).values()} == {"failed", "succeeded"}


def test_operators_policy_is_safe_to_repeat():
    """Operators built on RemoteJobOperator retry an unknown outcome: they look the job up by its id."""
    op = execution_dags.outcomes_dag.get_task("failed_job")
    assert op.retry_policy.safe_to_repeat is True and op.safe_to_repeat is True
    assert op.retry_policy.rules[: len(REMOTE_JOB_RULES)] == REMOTE_JOB_RULES


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (
            RemoteJobFailed("j1", 'relation "positions_v2" does not exist'),
            ("poison", "not-found"),
        ),  # data bug
        (RemoteJobFailed("j1", "connection reset by peer"), ("retryable", "connection-failed")),  # transient
        (RemoteJobFailed("j1", "read timed out"), ("unknown", "timeout")),  # may have applied: reconcile
        (ValidationRequired("j1", ["row 4: null"]), ("poison", "needs-validation")),  # needs a human
    ],
)
def test_remote_errors_are_classified_by_their_text(exc, expected):
    """The remote error text decides the class, as for any other failure."""
    result = classify(exc, REMOTE_JOB_RULES)
    assert (result.failure_class, result.category) == expected


@pytest.mark.parametrize(
    ("exc", "duplicate"),
    [
        (execution_dags.JobAlreadyExists("409 Conflict: job x already exists"), True),  # our service
        (RuntimeError("Duplicate job id"), True),  # the word alone
        (RuntimeError("quota exceeded"), False),  # any other refusal is not a duplicate
    ],
)
def test_duplicate_answers_are_recognised(exc, duplicate):
    """409, SQLSTATE 23505 or the words "already exists"/"duplicate" mean the job is there."""
    assert is_duplicate_error(exc) is duplicate
