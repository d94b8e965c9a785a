"""Kill switches per kind of work: when a switch is off, its tasks skip (not fail, not retry).

A kind is a name you choose (``ingestion``, ``reports``, ``dashboards``...). Its switch is off
when either the Airflow Variable ``retry_provider_kill_switch_<kind>`` or the environment
variable ``AIRFLOW_RETRY_KILL_SWITCH_<KIND>`` says ``off`` (also ``false``, ``0``, ``no``,
``disabled``; any case). Anything else, or nothing set, is on. "Off anywhere wins": a deployment
can stop a kind of work without a database round trip, and anyone with access to Variables can
stop it from the UI.

Use it on a ``@task`` (``@kill_switch("reports")`` under ``@task``), on a classic operator
(``KillSwitchMixin`` with ``kill_switch = "ingestion"``, or ``pre_execute=kill_switch_hook("ingestion")``).
The check runs when the task starts; a skipped task logs the reason and shows as ``skipped``.
"""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

log = logging.getLogger(__name__)

VARIABLE_PREFIX = "retry_provider_kill_switch_"
ENV_PREFIX = "AIRFLOW_RETRY_KILL_SWITCH_"
OFF_VALUES = frozenset({"off", "false", "0", "no", "disabled"})
_KIND = re.compile(r"^[a-z][a-z0-9_]{0,63}$")

F = TypeVar("F", bound=Callable[..., Any])


def check_kind(kind: str) -> str:
    """``kind`` if it is a valid name (lower-case letters, digits, ``_``); ValueError otherwise."""
    if not isinstance(kind, str) or not _KIND.match(kind):
        raise ValueError(
            f"kill switch kind must be 1-64 lower-case letters, digits or '_' starting with a letter, got {kind!r}"
        )
    return kind


def variable_name(kind: str) -> str:
    """The Airflow Variable of ``kind``'s switch: ``retry_provider_kill_switch_<kind>``."""
    return VARIABLE_PREFIX + check_kind(kind)


def env_name(kind: str) -> str:
    """The environment variable of ``kind``'s switch: ``AIRFLOW_RETRY_KILL_SWITCH_<KIND>``."""
    return ENV_PREFIX + check_kind(kind).upper()


@dataclass(frozen=True)
class SwitchState:
    """Where a kind of work stands.

    :param kind: the kind of work.
    :param on: whether its tasks run.
    :param source: what turned it off (``env AIRFLOW_RETRY_...`` or ``Variable retry_provider_...``), else "".
    :param value: the value found there.
    """

    kind: str
    on: bool
    source: str = ""
    value: str = ""

    @property
    def reason(self) -> str:
        return (
            f"kill switch {self.kind!r} is off ({self.source}={self.value!r}): "
            f"{self.kind} tasks are skipped until it is turned back on"
        )


def _is_off(value: Any) -> bool:
    return value is not None and str(value).strip().lower() in OFF_VALUES


def _variable(name: str) -> Any:
    try:
        from airflow.sdk import Variable

        return Variable.get(name, default=None)
    except Exception as exc:  # no API server / metadata DB: the env var still works
        log.debug("kill switch: could not read Variable %s: %s", name, exc)
        return None


def switch_state(kind: str, *, read_variable: Callable[[str], Any] = _variable) -> SwitchState:
    """The state of ``kind``'s switch: the environment variable first, then the Airflow Variable."""
    env = env_name(kind)
    value = os.environ.get(env)
    if _is_off(value):
        return SwitchState(kind, False, f"env {env}", str(value))
    name = variable_name(kind)
    value = read_variable(name)
    if _is_off(value):
        return SwitchState(kind, False, f"Variable {name}", str(value))
    return SwitchState(kind, True)


def check_kill_switch(kind: str, logger: Any = None) -> None:
    """Raise ``AirflowSkipException`` (logged, with the reason) when ``kind``'s switch is off."""
    from airflow.sdk.exceptions import AirflowSkipException

    state = switch_state(kind)
    if not state.on:
        (logger or log).warning("%s", state.reason)
        raise AirflowSkipException(state.reason)


def kill_switch(kind: str) -> Callable[[F], F]:
    """Decorator for a TaskFlow function (stack it under ``@task``): skip while ``kind`` is off."""
    check_kind(kind)

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            check_kill_switch(kind)
            return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def kill_switch_hook(kind: str) -> Callable[[Mapping[str, Any]], None]:
    """A ``pre_execute=`` callable for any operator or ``@task(pre_execute=...)``."""
    check_kind(kind)

    def pre_execute(context: Mapping[str, Any]) -> None:
        check_kill_switch(kind)

    pre_execute.__name__ = f"kill_switch_{kind}"
    return pre_execute


class KillSwitchMixin:
    """For classic operators: set ``kill_switch = "<kind>"`` (class or instance); checked in ``pre_execute``."""

    kill_switch: str | None = None

    def pre_execute(self, context: Any) -> None:
        if self.kill_switch:
            check_kill_switch(self.kill_switch, getattr(self, "log", None))
        super().pre_execute(context)  # type: ignore[misc]
