"""Run a work unit at most once per dedup window: ``@idempotent`` for ``@task``, ``IdempotentMixin`` for operators.

Both claim the unit's key in the ledger before running. A unit that already succeeded inside its
window is not run again: the recorded result is returned and the skip is logged. Of two concurrent
claims exactly one runs; the other raises :class:`WorkUnitBusy` (a retryable failure: its next try
finds the unit done). A failure is recorded, then re-raised for the retry policy to classify.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any, TypeVar

from airflow_retry_provider.identity import work_unit_key
from airflow_retry_provider.ledger.store import Claim, Ledger, WorkUnitBusy

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])
KeySpec = str | Callable[[Mapping[str, Any]], str] | None
LEASE_MARGIN = timedelta(minutes=5)


def _current_context() -> Mapping[str, Any] | None:
    try:
        from airflow.sdk import get_current_context

        return get_current_context()
    except Exception:  # outside a running task
        return None


def _owner_ti(context: Mapping[str, Any] | None) -> tuple[str | None, int | None]:
    ti = context.get("ti") if context else None
    if ti is None:
        return None, None
    map_index = getattr(ti, "map_index", -1)
    map_index = -1 if map_index is None else map_index
    return f"{ti.dag_id}/{ti.run_id}/{ti.task_id}/{map_index}", getattr(ti, "try_number", None)


def _lease_for(context: Mapping[str, Any] | None, lease: timedelta | None) -> timedelta | None:
    """An explicit lease, else the task's execution_timeout plus a margin, else the ledger's default."""
    if lease is not None:
        return lease
    task = context.get("task") if context else None
    timeout = getattr(task, "execution_timeout", None)
    return timeout + LEASE_MARGIN if isinstance(timeout, timedelta) else None


def resolve_key(key: KeySpec, context: Mapping[str, Any] | None, version: str | None) -> str:
    """The work-unit key: ``key`` itself, ``key(context)``, or ``work_unit_key(context, version)``."""
    if isinstance(key, str):
        return key
    if callable(key):
        return key(context or {})
    if context is None:
        raise RuntimeError("@idempotent needs a running Airflow task (or key=) to know its work unit")
    return work_unit_key(context, version)


def run_once(
    work: Callable[[], Any],
    *,
    ledger: Ledger,
    key: str,
    context: Mapping[str, Any] | None = None,
    lease: timedelta | None = None,
    remote_job_id: str | None = None,
    logger: Any = None,
) -> Any:
    """Claim ``key``, run ``work()`` if we won, record the outcome; the recorded result if already done."""
    logger = logger or log
    owner_ti, owner_try = _owner_ti(context)
    claim = ledger.claim(
        key,
        owner_ti=owner_ti,
        owner_try=owner_try,
        remote_job_id=remote_job_id,
        lease=_lease_for(context, lease),
    )
    if claim.outcome == "done":
        logger.info(
            "work unit %s already succeeded at %s (window until %s): not run again, returning its recorded result",
            key,
            claim.unit.finished_at,
            claim.unit.dedup_expires_at,
        )
        return claim.unit.result_ref
    if claim.outcome == "busy":
        raise WorkUnitBusy(
            f"work unit {key!r} is being run by {claim.unit.owner} "
            f"({claim.unit.owner_ti or 'unknown task'}); its lease expires at {claim.unit.lease_expires_at}"
        )
    if claim.outcome == "taken_over":
        logger.warning("work unit %s: took over the expired claim of %s", key, claim.unit.owner_ti)
    return _run_claimed(work, ledger, claim)


def _run_claimed(work: Callable[[], Any], ledger: Ledger, claim: Claim) -> Any:
    try:
        result = work()
    except BaseException as exc:
        try:
            ledger.fail(claim, f"{type(exc).__name__}: {exc}")
        except Exception:  # the original failure matters more than the bookkeeping
            log.exception("work unit %s: could not record the failure", claim.unit.key)
        raise
    ledger.complete(claim, result)
    return result


def idempotent(
    func: F | None = None,
    *,
    version: str | None = None,
    key: KeySpec = None,
    conn_id: str = "retry_provider_default",
    ledger: Ledger | None = None,
    dedup_window: timedelta | None = None,
    lease: timedelta | None = None,
) -> Any:
    """Run the decorated TaskFlow function once per work unit; stack it under ``@task``.

    :param version: the processing version: a new version is a new work unit.
    :param key: a fixed key or ``callable(context) -> str``; default ``work_unit_key(context, version)``.
    :param conn_id: the Airflow connection of the ledger's database.
    :param ledger: a :class:`Ledger` to use instead of ``conn_id``.
    :param dedup_window: how long a success is remembered (default 3600 s or
        ``[retry_provider] ledger_dedup_seconds``).
    :param lease: how long our claim is protected (default: execution_timeout + 5 minutes, else 1 hour).

    The function's return value is recorded (it must be JSON-serialisable) and returned again,
    without running, while the unit is inside its window.
    """

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            context = _current_context()
            unit_key = resolve_key(key, context, version)
            store = ledger or Ledger.from_conn_id(conn_id, dedup_window=dedup_window)
            return run_once(
                lambda: fn(*args, **kwargs), ledger=store, key=unit_key, context=context, lease=lease
            )

        wrapper.safe_to_repeat = True  # type: ignore[attr-defined]  # read by ClassifiedRetryPolicy
        return wrapper  # type: ignore[return-value]

    return decorate(func) if func is not None else decorate


class IdempotentMixin:
    """For classic operators: ``execute()`` calls ``self.run_idempotent(context, work)``.

    Class or instance attributes: ``idempotency_version`` (a new version is a new work unit),
    ``ledger_conn_id`` (default ``retry_provider_default``), ``dedup_window`` (None: 3600 s or
    ``[retry_provider] ledger_dedup_seconds``) and ``ledger_lease`` (None: execution_timeout + 5 minutes,
    else 1 hour).

    Such an operator is safe to repeat: its retry policy retries an unknown outcome (a timeout).
    """

    safe_to_repeat = True
    idempotency_version: str | None = None
    ledger_conn_id: str = "retry_provider_default"
    dedup_window: timedelta | None = None
    ledger_lease: timedelta | None = None

    def work_unit_key(self, context: Mapping[str, Any]) -> str:
        """The key of this task instance's unit of work."""
        return work_unit_key(context, self.idempotency_version)

    def ledger(self) -> Ledger:
        return Ledger.from_conn_id(self.ledger_conn_id, dedup_window=self.dedup_window)

    def run_idempotent(
        self, context: Mapping[str, Any], work: Callable[[], Any], *, remote_job_id: str | None = None
    ) -> Any:
        """Run ``work()`` unless the unit already succeeded inside its window (then its recorded result)."""
        return run_once(
            work,
            ledger=self.ledger(),
            key=self.work_unit_key(context),
            context=context,
            lease=self.ledger_lease,
            remote_job_id=remote_job_id,
            logger=getattr(self, "log", None),
        )
