"""DAGs of the execution-controls tests: kill switches and remote jobs on a real job service.

The job service is a PostgreSQL table on the ``retry_provider_default`` database: jobs keyed
by id, a submit of an existing id is refused with "409 Conflict: ... already exists", and a job
finishes ``run_seconds`` after it was submitted with the outcome it was given.
"""

from __future__ import annotations

import json
from contextlib import closing
from datetime import timedelta
from typing import Any

import pendulum
from airflow.sdk import DAG, task

from airflow_retry_provider.hooks.retry_provider import RetryProviderHook
from airflow_retry_provider.identity import make_remote_job_id, make_work_unit_key
from airflow_retry_provider.kill_switch import kill_switch, kill_switch_hook
from airflow_retry_provider.operators import SqlTransformOperator
from airflow_retry_provider.operators.remote_jobs import RemoteJob, RemoteJobOperator
from airflow_retry_provider.policy.backoff import Backoff
from airflow_retry_provider.policy.profiles import Profile

START = pendulum.datetime(2026, 11, 1, tz="America/Sao_Paulo")
JOB_PREFIX = "positions"

JOB_SERVICE_SQL = """
CREATE TABLE IF NOT EXISTS test_job_service (
    job_id        text PRIMARY KEY,
    payload       jsonb NOT NULL,
    outcome       text NOT NULL CHECK (outcome IN ('succeeded', 'failed')),
    error         text,
    warnings      text[] NOT NULL DEFAULT '{}',
    result        jsonb,
    submitted_by  text NOT NULL,
    submitted_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    finishes_at   timestamptz NOT NULL,
    refused       integer NOT NULL DEFAULT 0  -- submits of this id refused as duplicates
)
"""
SUBMIT_SQL = """
INSERT INTO test_job_service (job_id, payload, outcome, error, warnings, result, submitted_by, finishes_at)
VALUES (%(job_id)s, %(payload)s::jsonb, %(outcome)s, %(error)s, %(warnings)s, %(result)s::jsonb,
        %(submitted_by)s, clock_timestamp() + make_interval(secs => %(run_seconds)s::double precision))
"""
REFUSED_SQL = "UPDATE test_job_service SET refused = refused + 1 WHERE job_id = %(job_id)s"
GET_SQL = """
SELECT job_id, CASE WHEN clock_timestamp() >= finishes_at THEN outcome ELSE 'running' END,
       error, warnings, result
FROM test_job_service WHERE job_id = %(job_id)s
"""


class JobAlreadyExists(Exception):
    """The job service's answer to a second submit of one id."""

    status_code = 409


class JobService:
    """A tiny remote job system in PostgreSQL (the ``retry_provider_default`` database)."""

    def __init__(self, conn_id: str = "retry_provider_default") -> None:
        self.hook = RetryProviderHook(postgres_conn_id=conn_id)

    def submit(self, job_id: str, spec: dict[str, Any], submitted_by: str) -> None:
        import psycopg.errors

        params = {
            "job_id": job_id,
            "payload": json.dumps(spec),
            "outcome": spec.get("outcome", "succeeded"),
            "error": spec.get("error"),
            "warnings": list(spec.get("warnings", ())),
            "result": json.dumps(spec.get("result")),
            "submitted_by": submitted_by,
            "run_seconds": spec.get("run_seconds", 0.3),
        }
        with closing(self.hook.get_conn()) as conn:
            try:
                conn.cursor().execute(SUBMIT_SQL, params)
                conn.commit()
            except psycopg.errors.UniqueViolation:
                conn.rollback()
                conn.cursor().execute(REFUSED_SQL, params)
                conn.commit()
                raise JobAlreadyExists(f"409 Conflict: job {job_id} already exists") from None

    def get(self, job_id: str) -> RemoteJob:
        with closing(self.hook.get_conn()) as conn:
            cursor = conn.cursor()
            cursor.execute(GET_SQL, {"job_id": job_id})
            row = cursor.fetchone()
        if row is None:
            raise LookupError(f"404: no job {job_id}")
        return RemoteJob(job_id=row[0], state=row[1], error=row[2], warnings=tuple(row[3]), result=row[4])


class PgJobOperator(RemoteJobOperator):
    """Submit a job to the PostgreSQL job service.

    :param spec: outcome (``succeeded``/``failed``), error, warnings, result, run_seconds.
    """

    def __init__(self, *, spec: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(poll_interval=0.2, **kwargs)
        self.spec = spec

    def submit_remote(self, job_id: str, context: Any) -> None:
        JobService().submit(job_id, self.spec, submitted_by=f"{self.task_id}#{context['ti'].try_number}")

    def fetch_remote(self, job_id: str, context: Any) -> RemoteJob:
        return JobService().get(job_id)


def accept_few_warnings(job: RemoteJob, context: Any) -> dict[str, Any]:
    """Validation of the test: at most two non-fatal errors are acceptable."""
    if len(job.warnings) > 2:
        raise ValueError(f"{len(job.warnings)} warnings is too many")
    return {"result": job.result, "accepted_warnings": list(job.warnings)}


def _dag(dag_id: str) -> DAG:
    return DAG(dag_id=dag_id, schedule=None, start_date=START, catchup=False, tags=["test"])


with _dag("kill_switch_skips") as kill_switch_dag:

    @task
    @kill_switch("reports")
    def report() -> str:
        return "sent"

    @task(pre_execute=kill_switch_hook("dashboards"))
    def dashboard() -> str:
        return "refreshed"

    SqlTransformOperator(task_id="ingest", sql="SELECT 1", layer="silver", kill_switch="ingestion")

    @task
    def unaffected() -> str:
        return "ok"

    report()
    dashboard()
    unaffected()


with _dag("remote_job_duplicate") as duplicate_dag:

    @task
    def submitted_by_a_dead_worker(**context: Any) -> str:
        """A previous worker submitted the job, then died before storing its id in task_state_store."""
        ti = context["ti"]
        key = make_work_unit_key(
            ti.dag_id, "submit", -1, context["data_interval_start"], context["data_interval_end"], ti.run_id
        )
        job_id = make_remote_job_id(key, JOB_PREFIX)
        JobService().submit(job_id, {"result": {"rows": 7}, "run_seconds": 1.0}, submitted_by="dead-worker")
        return job_id

    submitted_by_a_dead_worker() >> PgJobOperator(
        task_id="submit", job_prefix=JOB_PREFIX, spec={"result": {"rows": 999}}, retry_profile="report"
    )


with _dag("remote_job_outcomes") as outcomes_dag:
    PgJobOperator(
        task_id="failed_job",
        job_prefix=JOB_PREFIX,
        spec={"outcome": "failed", "error": 'relation "positions_v2" does not exist'},
        retry_profile="report",
    )
    PgJobOperator(
        task_id="warned_job",
        job_prefix=JOB_PREFIX,
        spec={"result": {"rows": 10}, "warnings": ["row 4: amount is null", "row 9: unknown book"]},
        retry_profile="report",
    )
    PgJobOperator(
        task_id="validated_job",
        job_prefix=JOB_PREFIX,
        spec={"result": {"rows": 10}, "warnings": ["row 4: amount is null"]},
        validator=accept_few_warnings,
        retry_profile="report",
    )


REPLAY_PROFILE = Profile(
    name="remote_replay",
    max_attempts=1,
    backoff=Backoff(base=timedelta(seconds=1), cap=timedelta(seconds=1)),
    execution_timeout=timedelta(seconds=8),
    description="one try: a timeout leaves the job's outcome unknown and files a letter at once",
    safe_to_repeat=True,
)

with _dag("remote_job_replay") as remote_job_replay_dag:
    # the job outlives the try (20 s against 8 s): the try times out with its outcome unknown, and
    # a replay must reconnect to the job id it stored instead of submitting again
    PgJobOperator(
        task_id="long_job",
        job_prefix=JOB_PREFIX,
        spec={"result": {"rows": 3}, "run_seconds": 20},
        retry_profile=REPLAY_PROFILE,
    )
