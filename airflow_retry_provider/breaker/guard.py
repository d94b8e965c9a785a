"""The breaker at a task's edges: ask before the try, report how it ended.

:func:`guard` wires a task that uses a dependency (``apply_capacity`` and ``uses`` do it):

- **before the try** (the operator's ``pre_execute`` hook) the task asks its dependency's breaker.
  ``run`` and ``probe`` go on; ``hold`` raises ``AirflowRescheduleException``: the task goes
  ``up_for_reschedule``, keeps its try number (Airflow's task runner does not count a reschedule
  as a try) and frees its pool slot and worker until the breaker's next probe. A task held longer
  than the dependency's ``max_hold_seconds`` fails at once with :class:`DependencyOutage`, which
  names the outage, and becomes a letter.
- **after a failed try** (``on_retry_callback`` / ``on_failure_callback``) the failure is recorded
  against the dependency: unwell (a connection failure, a timeout, 5xx, 429, a deadlock) or not.
- **after a success** (``on_success_callback``) the success is recorded only when the breaker
  said the window holds failures or this task was its probe: an ordinary success on a healthy
  dependency opens no connection.

The breaker must never stop work by failing itself: when its database cannot be reached, the
task runs (and the failure to ask is logged).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from airflow.sdk.exceptions import AirflowFailException

from airflow_retry_provider import metrics
from airflow_retry_provider.airflow_compat import policy_with, retry_policy_reschedules
from airflow_retry_provider.callbacks import with_callback
from airflow_retry_provider.policy.breaker import (
    UNWELL_CATEGORIES,
    BreakerSettings,
    outage_fingerprint,
    outage_note,
)

log = logging.getLogger(__name__)

_verdicts: dict[str, Any] = {}
"""This task process's verdict per task instance, from ``pre_execute`` to the success callback."""


class DependencyOutage(AirflowFailException):
    """A task waited on an open breaker longer than its dependency's ``max_hold_seconds``.

    It fails the task at once (no retry could help while the dependency is down); the dead-letter
    callback files it with this message, which names the dependency and how long it was down.
    """


def ti_key(context: Mapping[str, Any]) -> str:
    """``dag_id/run_id/task_id/map_index`` of the task instance in ``context``."""
    ti = context["ti"]
    return f"{ti.dag_id}/{ti.run_id}/{ti.task_id}/{getattr(ti, 'map_index', -1)}"


def verdict_of(ti: Any) -> tuple[str, Any] | None:
    """The dependency and the verdict (``breaker.store.Verdict``) its breaker gave ``ti``'s current try
    in this process, while the callbacks have kept it (a hold that ended in :class:`DependencyOutage`)."""
    return _verdicts.get(f"{ti.dag_id}/{ti.run_id}/{ti.task_id}/{getattr(ti, 'map_index', -1)}")


def _store() -> Any:
    from airflow_retry_provider.breaker.store import BreakerStore

    return BreakerStore.from_conn_id()


@dataclass(frozen=True)
class BeforeTry:
    """The ``pre_execute`` hook: ask the breaker of ``dependency`` whether this try may run."""

    dependency: str
    settings: BreakerSettings
    previous: Any = None

    def __call__(self, context: Any) -> None:
        if self.previous is not None:
            self.previous(context)
        if not self.settings.enabled:
            return
        from airflow.sdk.exceptions import AirflowRescheduleException

        key = ti_key(context)
        try:
            verdict = _store().admit(self.dependency, key, self.settings)
        except Exception:  # the breaker never stops work by failing itself
            log.warning("breaker of %s: could not ask; the task runs", self.dependency, exc_info=True)
            return
        _verdicts[key] = (self.dependency, verdict)
        admission = verdict.admission
        if admission.kind != "run":
            metrics.incr("breaker", self.dependency, "expired" if verdict.expired else admission.kind)
        if admission.kind == "hold":
            if verdict.expired:
                raise DependencyOutage(
                    f"dependency {self.dependency!r} is down: held since {verdict.held_since:%Y-%m-%dT%H:%M:%SZ}, "
                    f"longer than its max_hold_seconds ({self.settings.max_hold_seconds}); "
                    f"{admission.reason}"
                )
            log.info(
                "breaker of %s: %s; asking again at %s", self.dependency, admission.reason, admission.until
            )
            raise AirflowRescheduleException(admission.until)
        if admission.kind == "probe":
            log.info("breaker of %s: this try is the probe", self.dependency)


def on_failure(context: Any) -> None:
    """Record a failed try against its dependency's breaker (``on_retry_callback`` and ``on_failure_callback``)."""
    task = context.get("task")
    guard_of = _guard_of(task)
    if guard_of is None:
        return
    exception = context.get("exception")
    if exception is None or isinstance(exception, DependencyOutage):
        return
    key = ti_key(context)
    _verdicts.pop(key, None)
    category, failure_class = _classification(task, context, exception)
    unwell = failure_class != "poison" and category in UNWELL_CATEGORIES
    try:
        _store().record_failure(
            guard_of.dependency, key, guard_of.settings, unwell=unwell, reason=f"{failure_class}/{category}"
        )
    except Exception:
        log.warning("breaker of %s: could not record a failure", guard_of.dependency, exc_info=True)


def on_success(context: Any) -> None:
    """Record a success when the breaker wants it (a probe, or a window with failures)."""
    key = ti_key(context)
    dependency, verdict = _verdicts.pop(key, (None, None))
    if verdict is None or not (verdict.hot or verdict.admission.kind == "probe"):
        return  # a success on a healthy dependency: no I/O
    try:
        _store().record_success(dependency, key)
    except Exception:
        log.warning("breaker of %s: could not record a success", dependency, exc_info=True)


@dataclass(frozen=True)
class Hold:
    """A failed try kept for after the outage: Airflow 3.4 reschedules the task without spending it.

    :param delay: until the breaker's next probe (plus the slack), from now.
    :param max_hold: the dependency's ``max_hold_seconds``: the reschedule's bound.
    :param reason: one line for the task's log.
    """

    delay: timedelta
    max_hold: timedelta
    reason: str


def hold_failed_try(context: Mapping[str, Any], category: str, failure_class: str) -> Hold | None:
    """The hold for a failed try of a guarded task whose dependency's breaker is open, else None.

    Only for an unwell failure (never poison) and only where Airflow can reschedule from a retry
    policy (3.4, :func:`~airflow_retry_provider.airflow_compat.retry_policy_reschedules`); on 3.3
    the try is spent, as before. The hold is recorded like one before a try (the recovered alert
    counts it as an attempt saved). Never raises: when the breaker cannot be asked, None.
    """
    if not retry_policy_reschedules() or failure_class == "poison" or category not in UNWELL_CATEGORIES:
        return None
    guard_of = _guard_of(context.get("task"))
    if guard_of is None or "ti" not in context:
        return None
    key = ti_key(context)
    try:
        verdict = _store().hold_failed_try(guard_of.dependency, key, guard_of.settings)
    except Exception:  # the breaker never stops work by failing itself
        log.warning("breaker of %s: could not ask; the try is spent", guard_of.dependency, exc_info=True)
        return None
    if verdict is None or verdict.expired or verdict.admission.until is None:
        return None  # closed, this task's own probe, or held its longest: the retry policy decides
    metrics.incr("breaker", guard_of.dependency, "hold")
    _verdicts.pop(key, None)
    now = datetime.now(timezone.utc)
    delay = max(verdict.admission.until - now, timedelta(seconds=1))
    reason = (
        f"dependency {guard_of.dependency!r} is down: {verdict.admission.reason} "
        f"(no try spent; at most {guard_of.settings.max_hold_seconds} s held)"
    )
    return Hold(delay, timedelta(seconds=guard_of.settings.max_hold_seconds), reason)


@dataclass(frozen=True)
class OutageCause:
    """The outage a failed task's dependency is in: the root cause its letter names and groups under."""

    dependency: str
    fingerprint: str
    note: str


def outage_cause(context: Mapping[str, Any]) -> OutageCause | None:
    """The outage of the guarded task's dependency when its breaker is open now, else None.

    Read by the dead-letter callback (one small read, only for a task the breaker guards). Never
    raises: when the breaker cannot be read, the letter keeps its own root cause.
    """
    guard_of = _guard_of(context.get("task"))
    if guard_of is None:
        return None
    try:
        breaker = _store().get(guard_of.dependency)
    except Exception:
        log.warning("breaker of %s: could not read it for the letter", guard_of.dependency, exc_info=True)
        return None
    if breaker.opened_at is None:
        return None
    return OutageCause(
        guard_of.dependency,
        outage_fingerprint(guard_of.dependency, breaker.opened_at),
        outage_note(guard_of.dependency, breaker.opened_at),
    )


def _classification(task: Any, context: Any, exception: BaseException) -> tuple[str, str]:
    """The class and category the task's retry policy gave this failure, else the default rules'."""
    policy = policy_with(task, "evaluation_for")  # the task's, or one in its chain (3.4)
    if policy is not None:
        evaluation = policy.evaluation_for(context, context["ti"].try_number)
        if evaluation is not None:
            cls = evaluation.classification
            return cls.category, cls.failure_class
    from airflow_retry_provider.policy.classify import classify

    cls = classify(exception)
    return cls.category, cls.failure_class


def _guard_of(task: Any) -> BeforeTry | None:
    """The breaker wired onto ``task`` by :func:`guard`, when it is enabled."""
    hook = getattr(task, "_pre_execute_hook", None)
    while hook is not None and not isinstance(hook, BeforeTry):
        hook = getattr(hook, "previous", None)
    return hook if hook is not None and hook.settings.enabled else None


def guard(operator: Any, dependency: str, settings: BreakerSettings) -> None:
    """Wire the breaker of ``dependency`` onto ``operator`` (an operator or a mapped operator).

    Idempotent: guarding a task twice (``apply_capacity`` then ``apply_profile``) wires it once;
    guarding it for another dependency replaces the first.
    """
    from airflow.sdk.definitions.mappedoperator import MappedOperator

    if isinstance(operator, MappedOperator):
        # a mapped operator hands its partial kwargs to each task it unmaps into
        previous = operator.partial_kwargs.get("pre_execute")
    else:
        previous = operator._pre_execute_hook  # the pre_execute= argument of BaseOperator
    while isinstance(previous, BeforeTry):
        previous = previous.previous
    hook = BeforeTry(dependency, settings, previous)
    if isinstance(operator, MappedOperator):
        operator.partial_kwargs["pre_execute"] = hook
    else:
        operator._pre_execute_hook = hook
    operator.on_retry_callback = with_callback(operator.on_retry_callback, on_failure)
    operator.on_failure_callback = with_callback(operator.on_failure_callback, on_failure)
    operator.on_success_callback = with_callback(operator.on_success_callback, on_success)
