"""What differs between Airflow 3.3 and 3.4, in one place: the provider's other modules ask here.

- **Tries.** 3.3 keeps the current try in ``task_instance`` and earlier ones in
  ``task_instance_history``; 3.4 drops that table: every try is a ``task_instance`` row (the live
  one with ``working_set`` TRUE, archived ones NULL), the table's ``map_index`` column is
  ``region_index`` (the ORM keeps ``map_index``), and the next try's row is created as soon as a
  try fails, carrying that try's times, delay and reason until it starts. :func:`attempts` (ORM,
  in the api-server) reads both; so does ``tools/devstack/metadata.py`` (SQL, for the demo and tests).
- **Retry features.** 3.4 adds ``ChainRetryPolicy`` (:func:`chain_policy`, None on 3.3; a
  ``ClassifiedRetryPolicy`` may sit in one: :func:`policy_with` finds it) and keeps the policy's
  reason on FAIL; its ``RetryDecision.reschedule`` (no try spent)
  holds a failure of a guarded task while its breaker is open (:func:`retry_policy_reschedules`).
- **Clearing.** 3.4's ``clearTaskInstances`` takes ``keep_task_state``; 3.3 refuses it (422). The
  REST client asks the api-server which version it runs (:func:`keeps_task_state`).

Reading Airflow's own version is right where the code runs beside Airflow (the api-server, a
worker); a client of a remote api-server asks it (``GET /api/v2/version``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

_MAJOR_MINOR = re.compile(r"(\d+)\.(\d+)")


def _major_minor(version: str) -> tuple[int, int]:
    """``(3, 4)`` of ``"3.4.0b2"``; a version that does not start with two numbers is a ValueError naming it."""
    found = _MAJOR_MINOR.match(version)
    if found is None:
        raise ValueError(f"airflow version: cannot read {version!r} (expected e.g. '3.4.0')")
    return int(found[1]), int(found[2])


def installed_version() -> tuple[int, int]:
    """Major and minor of the Airflow installed beside this code."""
    import airflow

    return _major_minor(airflow.__version__)


def keeps_task_state(version: str) -> bool:
    """Whether an Airflow of ``version`` (as ``/api/v2/version`` says it) takes ``keep_task_state`` on a clear."""
    return _major_minor(version) >= (3, 4)


def one_row_per_try() -> bool:
    """3.4 and later: every try is a ``task_instance`` row; 3.3 keeps earlier ones in ``task_instance_history``."""
    return installed_version() >= (3, 4)


def policies_in(policy: Any) -> Iterator[Any]:
    """``policy`` and, for a chain (3.4's ``ChainRetryPolicy``: ``policies``), every policy in it, in order."""
    if policy is None:
        return
    yield policy
    for member in getattr(policy, "policies", None) or ():
        yield from policies_in(member)


def policy_with(task: Any, attribute: str) -> Any:
    """The first policy of ``task.retry_policy`` (itself or one in a chain) that has ``attribute``, else None.

    How the failure callback, the alerts and the breaker find a ``ClassifiedRetryPolicy`` (by its
    ``evaluation_for`` or ``deadline_for``) wherever the task's author put it.
    """
    return next((p for p in policies_in(getattr(task, "retry_policy", None)) if hasattr(p, attribute)), None)


def dag_id_under_test() -> str | None:
    """The id of the DAG whose ``dag.test()`` is running in this thread, or None.

    Read from the call stack: ``DAG.test`` (``airflow/sdk/definitions/dag.py``) is the caller when its
    DagBag parses the file and runs the cluster policies; nothing else tells a policy it runs there.
    """
    import sys

    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "test" and code.co_filename.replace("\\", "/").endswith("sdk/definitions/dag.py"):
            dag_id = getattr(frame.f_locals.get("self"), "dag_id", None)
            return dag_id if isinstance(dag_id, str) else None
        frame = frame.f_back  # type: ignore[assignment]
    return None


def in_dag_test() -> bool:
    """True inside ``dag.test()``: the task runs in this process under Airflow's in-process test
    supervisor (``InProcessSupervisorComms``), not under a worker's."""
    import sys

    runner = sys.modules.get("airflow.sdk.execution_time.task_runner")
    return type(getattr(runner, "SUPERVISOR_COMMS", None)).__name__ == "InProcessSupervisorComms"


def retry_policy_reschedules() -> bool:
    """3.4 and later: a retry policy may answer ``RetryDecision.reschedule(...)`` (no try spent); 3.3 cannot."""
    return installed_version() >= (3, 4)


def chain_policy() -> Any:
    """Airflow's ``ChainRetryPolicy`` (3.4 and later), else None."""
    try:
        from airflow.sdk import ChainRetryPolicy  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        return None
    return ChainRetryPolicy


@dataclass(frozen=True)
class Attempt:
    """One try of a task instance as Airflow recorded it.

    :param try_number: the try, from 1.
    :param state: how it ended (or where it is, for the live try).
    :param start_date: when it started; None for a try that has not started.
    :param end_date: when it ended.
    :param duration: seconds it ran.
    :param retry_delay_override: the delay the retry policy chose after it, seconds.
    :param retry_reason: the reason the retry policy gave (3.4 keeps one on FAIL too).
    """

    try_number: int
    state: str | None
    start_date: datetime | None
    end_date: datetime | None
    duration: float | None
    retry_delay_override: float | None
    retry_reason: str | None

    @classmethod
    def of(cls, row: Any, state: str | None = None, carried: bool = False) -> Attempt:
        """From an ORM row, in ``state`` (else the row's); ``carried``: a try not started, whose times, delay and reason are the previous try's."""
        own = not carried
        if state is None and row.state is not None:
            state = str(row.state)
        return cls(
            try_number=int(row.try_number),
            state=state,
            start_date=row.start_date if own else None,
            end_date=row.end_date if own else None,
            duration=row.duration if own else None,
            retry_delay_override=row.retry_delay_override if own else None,
            retry_reason=row.retry_reason if own else None,
        )


def _one_row_per_try(rows: list[Any]) -> list[Attempt]:
    """3.4's rows of one task instance, oldest first, as tries.

    A row created for the next try copies the try before it (times, delay, reason) and keeps the
    copy until it starts: listed as Airflow lists it, without what is not its own. A try that ran
    and was archived for a retry is ``failed`` (as 3.4's scheduler archives it and 3.3 records it;
    an archive outside the scheduler may leave ``up_for_retry``).
    """
    found: list[Attempt] = []
    previous = None
    for row in rows:
        carried = (
            previous is not None and row.start_date is not None and row.start_date == previous.start_date
        )
        state = None
        if row.working_set is not True and not carried and str(row.state) == "up_for_retry":
            state = "failed"
        found.append(Attempt.of(row, state, carried))
        previous = row
    return found


def attempts(session: Any, ti: Any) -> list[Attempt]:
    """Every try of the task instance ``ti`` (its live ORM row), oldest first, as Airflow's tries endpoint lists them.

    On 3.3 the earlier tries come from ``task_instance_history``, then ``ti`` itself (once it has
    a try). On 3.4 every try is its own row (:func:`_one_row_per_try`).
    """
    from sqlalchemy import select

    key = {"dag_id": ti.dag_id, "run_id": ti.run_id, "task_id": ti.task_id, "map_index": ti.map_index}
    if one_row_per_try():
        model = type(ti)
        rows = session.scalars(
            select(model)
            .filter_by(**key)
            .order_by(model.try_number)
            .execution_options(include_all_attempts=True)
        ).all()
        return _one_row_per_try(list(rows))
    from airflow.models.taskinstancehistory import (  # type: ignore[import-not-found,unused-ignore]
        TaskInstanceHistory,
    )

    history = session.scalars(
        select(TaskInstanceHistory).filter_by(**key).order_by(TaskInstanceHistory.try_number)
    ).all()
    found = [Attempt.of(row) for row in history if row.try_number != ti.try_number]
    if ti.try_number:
        found.append(Attempt.of(ti))
    return found
