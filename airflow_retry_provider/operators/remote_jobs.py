"""Remote jobs submitted under a deterministic id, resumed through Airflow's ``task_state_store``.

:class:`RemoteJobOperator` builds on ``airflow.sdk.ResumableJobMixin``: the job id is
``identity.remote_job_id(context, prefix, version)``, so every try of a task instance submits
the same id. The mixin stores the id in ``task_state_store`` and, on a retry, reconnects to a
job still running or returns the result of one that succeeded. Two more rules close the gaps:

* the remote side answers "already exists" / "duplicate" (a worker died between submitting and
  storing the id, or someone else submitted it): the existing job is looked up, never a new id;
* a job that finished with an error is a failure: :class:`RemoteJobFailed` carries the remote
  error text, so the retry policy classifies it (a "does not exist" is poison, a "connection
  reset" retryable); a job that finished with non-fatal errors goes to validation
  (:meth:`RemoteJobOperator.validate`), never straight to success.

Because they look the job up by its deterministic id before resubmitting, these operators are
safe to repeat (``safe_to_repeat = True``): an unknown outcome (a timeout) is retried.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from airflow.sdk import BaseOperator, ResumableJobMixin

from airflow_retry_provider.identity import remote_job_id
from airflow_retry_provider.policy import ExceptionType, Profile, Rule

JobState = Literal["pending", "running", "succeeded", "failed"]
ACTIVE_STATES = frozenset({"pending", "running"})
DUPLICATE_MARKERS = ("already exists", "duplicate", "already submitted")


class RemoteJobFailed(RuntimeError):
    """The remote job finished with an error; the message carries the remote error text."""

    def __init__(self, job_id: str, error: str) -> None:
        super().__init__(f"remote job {job_id} failed: {error}")
        self.job_id = job_id
        self.error = error


class ValidationRequired(RuntimeError):
    """The remote job finished with non-fatal errors and no validation accepted its output."""

    def __init__(self, job_id: str, errors: Sequence[str]) -> None:
        shown = "; ".join(errors[:5]) + ("; ..." if len(errors) > 5 else "")
        super().__init__(
            f"remote job {job_id} finished with {len(errors)} non-fatal error(s), "
            f"so its output needs validation before it counts as done: {shown}"
        )
        self.job_id = job_id
        self.errors = tuple(errors)


REMOTE_JOB_RULES: tuple[Rule, ...] = (
    # resubmitting cannot fix output that needs a human or a validation step
    ExceptionType("ValidationRequired", "poison", "needs-validation"),
)
"""Classification rules these operators add in front of the defaults."""


@dataclass(frozen=True)
class RemoteJob:
    """What the remote side says about one job.

    :param job_id: the id it was submitted under.
    :param state: ``pending``, ``running``, ``succeeded`` or ``failed``.
    :param error: the fatal error of a ``failed`` job.
    :param warnings: non-fatal errors of a finished job (rows rejected, partial output...).
    :param result: what the job produced (JSON), for XCom.
    """

    job_id: str
    state: JobState
    error: str | None = None
    warnings: tuple[str, ...] = ()
    result: Any = None


def is_duplicate_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the remote side refusing an id it already has (409, SQLSTATE 23505, or the words)."""
    current: BaseException | None = exc
    while current is not None:
        status = getattr(current, "status_code", None) or getattr(current, "status", None)
        if status == 409 or getattr(current, "sqlstate", None) == "23505":
            return True
        message = str(current).lower()
        if any(marker in message for marker in DUPLICATE_MARKERS):
            return True
        current = current.__cause__ or current.__context__
    return False


def remote_job_policy(profile: str | Profile, **policy_kwargs: Any) -> Any:
    """A ``ClassifiedRetryPolicy`` for remote jobs: ``safe_to_repeat=True`` and :data:`REMOTE_JOB_RULES`."""
    from airflow_retry_provider.retry_policy import ClassifiedRetryPolicy

    rules = (*REMOTE_JOB_RULES, *policy_kwargs.pop("rules", ()))
    return ClassifiedRetryPolicy(profile, safe_to_repeat=True, rules=rules, **policy_kwargs)


class RemoteJobOperator(ResumableJobMixin, BaseOperator):
    """Submit one job to a remote system under a deterministic id and wait for it.

    Subclasses implement :meth:`submit_remote` and :meth:`fetch_remote` (and optionally
    :meth:`validate`); ``execute()`` is the mixin's resumable run.

    :param job_prefix: the id's prefix (letters, digits, ``_``, ``-``), e.g. ``"positions"``.
    :param version: the processing version; a new version is a new job id.
    :param poll_interval: seconds between status reads.
    :param validator: ``callable(job, context) -> result`` checking the output of a job that
        finished with non-fatal errors; raise to reject. Without it such a job fails with
        :class:`ValidationRequired` (poison: it goes to the dead-letter queue for review).
    :param retry_profile: a retry profile applied with ``safe_to_repeat=True`` and the remote-job rules.
    """

    external_id_key = "remote_job_id"
    safe_to_repeat = True

    def __init__(
        self,
        *,
        job_prefix: str,
        version: str | None = None,
        poll_interval: float = 5.0,
        validator: Callable[[RemoteJob, Mapping[str, Any]], Any] | None = None,
        retry_profile: str | Profile | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.job_prefix = job_prefix
        self.version = version
        self.poll_interval = poll_interval
        self.validator = validator
        if retry_profile is not None:
            from airflow_retry_provider.retry_policy import apply_profile

            apply_profile(self, retry_profile, safe_to_repeat=True, rules=REMOTE_JOB_RULES)

    # -- to implement -------------------------------------------------------------------------

    def submit_remote(self, job_id: str, context: Mapping[str, Any]) -> None:
        """Submit the job under ``job_id``; an "already exists" answer may simply raise."""
        raise NotImplementedError

    def fetch_remote(self, job_id: str, context: Mapping[str, Any]) -> RemoteJob:
        """The remote side's view of ``job_id``."""
        raise NotImplementedError

    def validate(self, job: RemoteJob, context: Mapping[str, Any]) -> Any:
        """Check the output of a job that finished with non-fatal errors; return the task's result."""
        if self.validator is None:
            raise ValidationRequired(job.job_id, job.warnings)
        self.log.warning(
            "remote job %s finished with %d non-fatal error(s); validating its output",
            job.job_id,
            len(job.warnings),
        )
        return self.validator(job, context)

    # -- ResumableJobMixin --------------------------------------------------------------------

    def execute(self, context: Any) -> Any:
        return self.execute_resumable(context)

    def job_id(self, context: Mapping[str, Any]) -> str:
        """This task instance's deterministic job id."""
        return remote_job_id(context, self.job_prefix, self.version)

    def submit_job(self, context: Any) -> str:
        job_id = self.job_id(context)
        try:
            self.submit_remote(job_id, context)
            self.log.info("submitted remote job %s", job_id)
        except Exception as exc:
            if not is_duplicate_error(exc):
                raise
            job = self.fetch_remote(job_id, context)
            self.log.warning(
                "remote job %s already exists (%s): using it (state %s) instead of submitting again",
                job_id,
                exc,
                job.state,
            )
        return job_id

    def get_job_status(self, external_id: Any, context: Any) -> str:
        return self.fetch_remote(str(external_id), context).state

    def is_job_active(self, status: str) -> bool:
        return status in ACTIVE_STATES

    def is_job_succeeded(self, status: str) -> bool:
        return status == "succeeded"

    def poll_until_complete(self, external_id: Any, context: Any) -> Any:
        while True:
            job = self.fetch_remote(str(external_id), context)
            if job.state not in ACTIVE_STATES:
                break
            time.sleep(self.poll_interval)
        # the mixin returns this on a reconnect, and calls get_job_result after it on a fresh
        # submit: validate once and remember the answer for this execution
        self._result = (str(external_id), self._finished(job, context))
        return self._result[1]

    def get_job_result(self, external_id: Any, context: Any) -> Any:
        cached = getattr(self, "_result", None)
        if cached is not None and cached[0] == str(external_id):
            return cached[1]
        return self._finished(self.fetch_remote(str(external_id), context), context)

    def _finished(self, job: RemoteJob, context: Any) -> Any:
        if job.state == "failed":
            raise RemoteJobFailed(job.job_id, job.error or "no error text")
        if job.state != "succeeded":
            raise RuntimeError(f"remote job {job.job_id} is {job.state}, not finished")
        if job.warnings:
            return self.validate(job, context)
        return job.result
