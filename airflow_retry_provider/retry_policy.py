"""The Airflow edge of the policy core: an ``airflow.sdk.RetryPolicy`` and the profile helper.

``ClassifiedRetryPolicy.evaluate`` runs in the worker after a failed try. It classifies the
exception, records the try in ``retry_failed_tries`` and works out the author's attempts spent
within the current replay generation (a cleared task starts its backoff afresh): the failures of
the task's own code, plus the tries that ended with no exception (killed, evicted, lost) beyond
the profile's ``infra_allowance``. It seeds the jitter with the work unit's stable identity and
turns the pure core's decision into a ``RetryDecision``. It never raises: Airflow would silently
fall back to its own defaults.

Building a policy (when the DAG file is parsed) reads the rule file of
``[retry_provider] rules_file`` (:mod:`airflow_retry_provider.rules_file`): a bad file fails the
DAG's import, not a task.
"""

from __future__ import annotations

import functools
import logging
import socket
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, NamedTuple

from airflow.sdk import RetryDecision, RetryPolicy

from airflow_retry_provider import metrics, settings, sql
from airflow_retry_provider.airflow_compat import chain_policy
from airflow_retry_provider.callbacks import with_callback
from airflow_retry_provider.identity import work_unit_key
from airflow_retry_provider.masking import mask
from airflow_retry_provider.policy import (
    DEFAULT_INFRA_ALLOWANCE,
    Backoff,
    Classification,
    DeadLetter,
    Profile,
    Retry,
    Rule,
    classify,
    decide,
    get_profile,
    rule_book,
    sized_retries,
)
from airflow_retry_provider.policy.decide import MAX_REASON_CHARS, check_aware, check_duration
from airflow_retry_provider.policy.impact import DELIVERY_PARAM
from airflow_retry_provider.policy.profiles import INFRA_ALLOWANCE_LIMIT
from airflow_retry_provider.policy.text import storable
from airflow_retry_provider.policy.tries import attempts_spent, tag_reason
from airflow_retry_provider.rules_file import load_rules_file

log = logging.getLogger(__name__)

DEFAULT_BACKOFF = Backoff()
FAILED_TRIES_CONNECT_TIMEOUT = 3
"""Seconds the policy waits to connect to the provider's database before it counts by try number."""


@dataclass(frozen=True)
class DeliveryDeadline:
    """ "Delivered by ``at`` local time in ``timezone``, ``days_after`` days after the data interval ends."

    :param at: ``"HH:MM"``, e.g. ``"09:00"``.
    :param timezone: an IANA name, e.g. ``"America/Sao_Paulo"``.
    :param days_after: days after the day the data interval ends (in ``timezone``).
    """

    at: str = "09:00"
    timezone: str = "America/Sao_Paulo"
    days_after: int = 1

    def __post_init__(self) -> None:
        hour, _, minute = self.at.partition(":")
        if not (hour.isdigit() and minute.isdigit() and int(hour) < 24 and int(minute) < 60):
            raise ValueError(f"DeliveryDeadline.at must be 'HH:MM', got {self.at!r}")
        import pendulum

        try:
            pendulum.timezone(self.timezone)
        except Exception as exc:
            raise ValueError(f"DeliveryDeadline.timezone: unknown time zone {self.timezone!r}") from exc

    def resolve(self, context: Mapping[str, Any] | None) -> datetime | None:
        """The deadline of the run in ``context`` (None without a data interval or run date)."""
        import pendulum

        if not context:
            return None
        anchor = context.get("data_interval_end")
        if anchor is None:
            dag_run = context.get("dag_run")
            anchor = getattr(dag_run, "run_after", None)
        if anchor is None:
            return None
        local = pendulum.instance(anchor).in_timezone(self.timezone)
        hour, minute = (int(part) for part in self.at.split(":"))
        day = local.add(days=self.days_after)
        return day.replace(hour=hour, minute=minute, second=0, microsecond=0)


DeadlineSpec = DeliveryDeadline | datetime | Callable[[Mapping[str, Any] | None], datetime | None]


class Evaluation(NamedTuple):
    """What the policy decided for one failed try; the dead-letter callback reads it back.

    ``deadline`` is the run's delivery deadline, when the policy has one.
    """

    classification: Classification
    decision: Retry | DeadLetter
    attempt: int
    max_attempts: int
    deadline: datetime | None = None


class ClassifiedRetryPolicy(RetryPolicy):
    """Retry by failure class: poison and blind resubmits go to the dead-letter queue.

    :param profile: a profile name (``"dashboard"``, ``"report"``, ``"pipeline"`` or one you
        registered) or a ``Profile``; it gives max_attempts, the backoff and whether plain tasks
        are safe to repeat.
    :param rules: extra classification rules, checked before the rule file's and the defaults.
    :param backoff: overrides the profile's backoff.
    :param max_attempts: overrides the profile's ceiling (counts the first try). Without a
        profile or this, the task's own ``retries`` + 1.
    :param infra_allowance: overrides the profile's ``infra_allowance``: tries that end with no
        exception (killed, evicted, lost) before they spend ``max_attempts``; ``retries`` is sized
        ``max_attempts - 1 + infra_allowance``. Without a ceiling (no profile, no ``max_attempts``)
        there is no allowance: every try spends one of the task's ``retries``.
    :param deadline: a ``DeliveryDeadline``, an aware datetime, or ``callable(context)``.
    :param expected_duration: how long a retry takes to run.
    :param validation: how long checking its output takes.
    :param safe_to_repeat: running the work again does no harm, so an unknown outcome (a
        timeout) is retried with backoff instead of sent to the queue. None (the default): safe
        when the task is idempotent by construction (``@idempotent``, ``IdempotentMixin``, the
        medallion and remote-job operators, anything with ``safe_to_repeat = True``) or when the
        profile says so.
    :param clock: returns "now" (aware); tests pass a fixed one.
    """

    def __init__(
        self,
        profile: str | Profile | None = None,
        *,
        rules: Sequence[Rule] = (),
        backoff: Backoff | None = None,
        max_attempts: int | None = None,
        infra_allowance: int | None = None,
        deadline: DeadlineSpec | None = None,
        expected_duration: timedelta = timedelta(0),
        validation: timedelta = timedelta(0),
        safe_to_repeat: bool | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        _check_arguments(profile=profile, rules=rules, backoff=backoff, deadline=deadline, clock=clock)
        self.profile = get_profile(profile) if isinstance(profile, str) else profile
        self.rules = tuple(rules)
        # compiled once, used by every evaluate; a bad rule file fails here, at parse time
        self._rule_book = rule_book((*self.rules, *load_rules_file()))
        self.backoff = backoff or (self.profile.backoff if self.profile else DEFAULT_BACKOFF)
        if max_attempts is not None and (
            isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1
        ):
            raise ValueError(f"max_attempts must be an integer >= 1, got {_kind(max_attempts)}")
        self.max_attempts = max_attempts or (self.profile.max_attempts if self.profile else None)
        if infra_allowance is not None and (
            isinstance(infra_allowance, bool)
            or not isinstance(infra_allowance, int)
            or not 0 <= infra_allowance <= INFRA_ALLOWANCE_LIMIT
        ):
            raise ValueError(
                f"infra_allowance must be an integer from 0 to {INFRA_ALLOWANCE_LIMIT}, got {_kind(infra_allowance)}"
            )
        if infra_allowance is None:
            infra_allowance = self.profile.infra_allowance if self.profile else DEFAULT_INFRA_ALLOWANCE
        self.infra_allowance = infra_allowance if self.max_attempts is not None else 0
        self.deadline = deadline
        self.expected_duration = check_duration("expected_duration", expected_duration)
        self.validation = check_duration("validation", validation)
        if safe_to_repeat not in (None, True, False):
            raise ValueError(f"safe_to_repeat must be True, False or None, got {safe_to_repeat!r}")
        self.safe_to_repeat = safe_to_repeat
        self.clock = clock or (lambda: datetime.now(timezone.utc))
        self._evaluations: dict[tuple[Any, ...], Evaluation] = {}  # oldest first
        self._errors: dict[tuple[Any, ...], str] = {}  # the policy's own failures, oldest first

    # -- RetryPolicy ------------------------------------------------------------------------

    def evaluate(
        self,
        exception: BaseException,
        try_number: int,
        max_tries: int,
        context: Any = None,
    ) -> RetryDecision:
        try:
            evaluation = self.assess(exception, try_number, max_tries, context)
            classification, decision = evaluation.classification, evaluation.decision
            reason = tag_reason(
                decision.reason, classification.rule, self._profile_as_configured(), evaluation.deadline
            )
            # redacted by the core; masked like a letter (Airflow keeps it on the task instance and
            # shows it in the Retries tab); NUL or a lone surrogate would make Airflow's row fail
            reason = storable(mask(reason))
        except Exception as exc:  # never let Airflow fall back to blind retries
            log.exception("airflow-retry-provider: retry policy failed; failing the task for review")
            _remember(self._errors, context, try_number, f"{type(exc).__name__}: {exc}")
            reason = (
                f"[policy error] {type(exc).__name__}: the retry policy could not decide; sent for review"
            )
            return RetryDecision.fail(reason=reason[:MAX_REASON_CHARS])
        if isinstance(decision, Retry):
            held = self._held(context, classification)
            if held is not None:
                metrics.decision(classification.failure_class, classification.category, "reschedule")
                return held
            metrics.decision(classification.failure_class, classification.category, "retry")
            return RetryDecision.retry(delay=decision.delay, reason=reason)
        metrics.decision(classification.failure_class, decision.category, "dead_letter")
        return RetryDecision.fail(reason=reason)

    def _held(self, context: Any, classification: Classification) -> RetryDecision | None:
        """On Airflow 3.4, a retry of a guarded task whose dependency's breaker is open: rescheduled
        until its next probe, no try spent, bounded by the breaker's ``max_hold_seconds`` (docs/BREAKER.md)."""
        if not context:
            return None
        from airflow_retry_provider.breaker.guard import hold_failed_try

        try:
            hold = hold_failed_try(context, classification.category, classification.failure_class)
        except Exception:  # the breaker never stops a decision by failing itself
            log.warning("airflow-retry-provider: could not ask the breaker; the try is spent", exc_info=True)
            return None
        if hold is None:
            return None
        return RetryDecision.reschedule(  # type: ignore[attr-defined,unused-ignore]
            hold.delay, reschedule_timeout=hold.max_hold, reason=storable(mask(hold.reason))
        )

    def serialize(self) -> dict[str, Any]:
        return {
            "__type": "ClassifiedRetryPolicy",
            "profile": self.profile.name if self.profile else None,
            "max_attempts": self.max_attempts,
            "infra_allowance": self.infra_allowance,
            "safe_to_repeat": self.safe_to_repeat,
        }

    # -- the two budgets ----------------------------------------------------------------------

    def allowance(self) -> int:
        """The infrastructure allowance in force: ``infra_allowance``, or 0 while the kill switch
        ``[retry_provider] infra_allowance_enabled`` is off."""
        return self.infra_allowance if settings.infra_allowance_enabled() else 0

    def retries_needed(self) -> int | None:
        """The task's ``retries`` that holds both budgets (``max_attempts - 1 + allowance()``); None
        without a ceiling (the task's own ``retries`` is the ceiling)."""
        if self.max_attempts is None:
            return None
        return sized_retries(self.max_attempts, self.allowance())

    # -- the decision, for the callback and for tests -----------------------------------------

    def assess(
        self, exception: BaseException, try_number: int, max_tries: int, context: Any = None
    ) -> Evaluation:
        """Classify and decide (:func:`airflow_retry_provider.policy.decide`); remember the result
        for this task instance and try.

        The attempt counts within the current replay generation: after a clear, Airflow's
        ``max_tries`` grows by the task's ``retries``, and the backoff starts afresh. It counts the
        author's attempts: the code's own failures of the generation (the rows of
        ``retry_failed_tries``), the other tries (no exception) beyond :meth:`allowance`, and this one.
        """
        now = check_aware("clock()", self.clock())
        classification = classify(exception, self._rule_book, now=now)
        retries = getattr(context.get("task") if context else None, "retries", None)
        if not isinstance(retries, int) or isinstance(retries, bool):
            retries = max_tries  # no task to read: assume the first generation
        position = max(1, try_number - max(0, max_tries - retries))  # this try's place in its generation
        attempt = self._attempts_spent(context, try_number, position, classification)
        max_attempts = self.max_attempts or retries + 1
        deadline = self.deadline_for(context)
        decision = decide(
            classification,
            attempt=attempt,
            max_attempts=max_attempts,
            now=now,
            backoff=self.backoff,
            seed=self._work_unit_key(context),
            deadline=deadline,
            expected_duration=self.expected_duration,
            validation=self.validation,
            safe_to_repeat=self.is_safe_to_repeat(context),
        )
        evaluation = Evaluation(
            classification=classification,
            decision=decision,
            attempt=attempt,
            max_attempts=max_attempts,
            deadline=deadline,
        )
        _remember(self._evaluations, context, try_number, evaluation)
        return evaluation

    def _attempts_spent(
        self, context: Any, try_number: int, position: int, classification: Classification
    ) -> int:
        """Record this try and count the author's attempts spent; ``position`` (every earlier try of
        the generation spent one, Airflow's count) when the provider's database cannot be reached."""
        if not context or "ti" not in context:
            return position
        allowance = self.allowance()
        ti = context["ti"]
        try:
            code_failures = record_failed_try(
                ti,
                try_number=try_number,
                first_try=try_number - position + 1,
                failure_class=classification.failure_class,
                category=classification.category,
            )
        except Exception as exc:  # conservative: never more runs than Airflow's own count allows
            log.warning(
                "airflow-retry-provider: could not record the failed try in retry_failed_tries (%s); "
                "every earlier try of the generation counts as an attempt spent",
                type(exc).__name__,
            )
            return position
        return attempts_spent(
            earlier_tries=position - 1, code_failures=code_failures, infra_allowance=allowance
        )

    def evaluation_for(self, context: Mapping[str, Any], try_number: int) -> Evaluation | None:
        """The evaluation made for ``try_number`` of the task instance in ``context``, if any."""
        return self._evaluations.get(_ti_key(context, try_number))

    def error_for(self, context: Mapping[str, Any], try_number: int) -> str | None:
        """What made this policy fail to decide ``try_number`` of the task instance in ``context``, if it did."""
        return self._errors.get(_ti_key(context, try_number))

    def _profile_as_configured(self) -> str | None:
        """The profile's name, if its backoff and ceiling are the ones used (the Retries tab plans with them)."""
        profile = self.profile
        if profile is None or (self.backoff, self.max_attempts) != (profile.backoff, profile.max_attempts):
            return None
        return profile.name

    def is_safe_to_repeat(self, context: Any) -> bool:
        """``safe_to_repeat`` if given, else whether the task is marked safe or the profile is."""
        if self.safe_to_repeat is not None:
            return self.safe_to_repeat
        task = context.get("task") if context else None
        # an operator, or @idempotent's wrapper
        if getattr(task, "safe_to_repeat", False) is True:
            return True
        if getattr(getattr(task, "python_callable", None), "safe_to_repeat", False) is True:
            return True
        return self.profile is not None and self.profile.safe_to_repeat

    def _work_unit_key(self, context: Any) -> str:
        """The jitter's seed: the work unit's stable identity (its data interval, not the clock)."""
        if not context or "ti" not in context:
            return "no-context"
        return work_unit_key(context)

    def deadline_for(self, context: Any) -> datetime | None:
        """The delivery deadline of the run in ``context``, if this policy has one."""
        spec = self.deadline
        if spec is None:
            return None
        if isinstance(spec, DeliveryDeadline):
            deadline = spec.resolve(context)
        elif isinstance(spec, datetime):
            deadline = spec
        else:
            deadline = spec(context)
        return None if deadline is None else check_aware("deadline", deadline)


def record_failed_try(ti: Any, *, try_number: int, first_try: int, failure_class: str, category: str) -> int:
    """Record a try of ``ti`` that its code failed in ``retry_failed_tries`` (once) and return how
    many earlier tries of the generation (``first_try`` to ``try_number - 1``) its code failed.

    One short transaction on the Airflow connection ``retry_provider_default``: a connect timeout
    of :data:`FAILED_TRIES_CONNECT_TIMEOUT` seconds and a statement timeout of 3 s, so an unreachable
    or locked database costs the decision seconds, never the try.
    """
    import psycopg

    from airflow_retry_provider.database import DEFAULT_CONN_ID, kept
    from airflow_retry_provider.hooks.retry_provider import RetryProviderHook

    def connect() -> Any:
        kwargs = RetryProviderHook(postgres_conn_id=DEFAULT_CONN_ID).connect_kwargs()
        kwargs["connect_timeout"] = FAILED_TRIES_CONNECT_TIMEOUT
        return psycopg.connect(**kwargs)

    statements = sql.named("airflow_retry_provider", "retry_policy.sql")
    params = {
        "dag_id": ti.dag_id,
        "run_id": ti.run_id,
        "task_id": ti.task_id,
        "map_index": getattr(ti, "map_index", -1),
        "try_number": try_number,
        "first_try": first_try,
        "failure_class": failure_class,
        "category": category,
        "hostname": getattr(ti, "hostname", None) or socket.gethostname(),
    }
    # the process's kept connection: the failure callback that may follow files its letter on it
    with sql.transaction(kept(connect)()) as conn, conn.cursor() as cursor:
        cursor.execute(statements["bound_statement"])
        cursor.execute(statements["record_try_and_count_code_failures"], params)
        row = cursor.fetchone()
    return int(row[0])


def _kind(value: Any) -> str:
    return f"{value!r} (a {type(value).__name__})"


def _check_arguments(*, profile: Any, rules: Any, backoff: Any, deadline: Any, clock: Any) -> None:
    """Refuse an argument of the wrong type where the policy is built (the DAG's parse), naming it,
    its value and what is accepted: a wrong one would otherwise fail only at the first failed try."""
    if profile is not None and not isinstance(profile, (str, Profile)):
        raise TypeError(f"profile must be a profile name or a Profile, got {_kind(profile)}")
    if isinstance(rules, (str, bytes)) or not all(
        isinstance(rule, Rule) for rule in (rules if isinstance(rules, Sequence) else [rules])
    ):
        raise TypeError(f"rules must be a list of Rule, got {_kind(rules)}")
    if backoff is not None and not isinstance(backoff, Backoff):
        raise TypeError(
            f"backoff must be a Backoff, e.g. Backoff(base=timedelta(minutes=5)), got {_kind(backoff)}"
        )
    if deadline is not None and not (
        isinstance(deadline, (DeliveryDeadline, datetime)) or callable(deadline)
    ):
        raise TypeError(
            f"deadline must be a DeliveryDeadline (e.g. DeliveryDeadline(at={deadline!r}) for a time of day), "
            f"a timezone-aware datetime or a callable(context) returning one, got {_kind(deadline)}"
            if isinstance(deadline, str)
            else "deadline must be a DeliveryDeadline, a timezone-aware datetime or a callable(context) "
            f"returning one, got {_kind(deadline)}"
        )
    if isinstance(deadline, datetime):
        check_aware("deadline", deadline)
    if clock is not None and not callable(clock):
        raise TypeError(f"clock must be a callable returning a timezone-aware datetime, got {_kind(clock)}")


def _ti_key(context: Mapping[str, Any], try_number: int) -> tuple[Any, ...]:
    ti = context["ti"]
    return (ti.dag_id, ti.run_id, ti.task_id, getattr(ti, "map_index", -1), try_number)


def _remember(memory: dict[tuple[Any, ...], Any], context: Any, try_number: int, value: Any) -> None:
    """Keep ``value`` for this try of the task instance in ``context`` (the last 256 tries, oldest dropped)."""
    if context and "ti" in context:
        memory[_ti_key(context, try_number)] = value
        if len(memory) > 256:
            del memory[next(iter(memory))]


# -- applying a profile ------------------------------------------------------------------------


class ProfileConflictError(ValueError):
    """A task's hand-set ``retries`` contradicts its profile (a policy cannot add attempts)."""


def apply_profile(target: Any, profile: str | Profile, **policy_kwargs: Any) -> Any:
    """Apply a retry profile to ``default_args`` (a dict), an operator, or a ``@task`` call's result.

    Sets ``retries`` to ``max_attempts - 1 + infra_allowance`` (both budgets; the allowance is 0
    while ``[retry_provider] infra_allowance_enabled`` is off), ``retry_policy``, ``execution_timeout``, ``retry_delay``
    (the backoff's base, for failures the policy never sees, such as a killed worker) and adds the
    dead-letter ``on_failure_callback`` to any callbacks already there. A ``retries`` already set
    to something else is a ``ProfileConflictError``. Returns ``target``.

    A ``retry_policy`` the author already set (not one of ours) is kept in front: on Airflow 3.4
    the task gets a chain (``ChainRetryPolicy``: the author's policy first, the profile's when it
    makes no decision); on 3.3, which cannot chain policies, a ``ProfileConflictError`` naming both.
    """
    resolved = get_profile(profile) if isinstance(profile, str) else profile
    policy = ClassifiedRetryPolicy(resolved, **policy_kwargs)
    if isinstance(target, MutableMapping):
        _apply_to_mapping(target, resolved, policy)
        return target
    operator = getattr(target, "operator", target)  # XComArg from a @task call
    _apply_to_operator(operator, resolved, policy)
    return target


def _check_retries(where: str, retries: Any, profile: Profile, policy: ClassifiedRetryPolicy) -> None:
    wanted = policy.retries_needed()
    if retries not in (None, wanted):
        raise ProfileConflictError(
            f"{where}: retries={retries!r} contradicts retry profile {profile.name!r} "
            f"(max_attempts={policy.max_attempts} and infra_allowance={policy.allowance()}, "
            f"so retries must be {wanted}); remove retries or choose another profile"
        )


def _apply_to_mapping(
    args: MutableMapping[str, Any], profile: Profile, policy: ClassifiedRetryPolicy
) -> None:
    from airflow_retry_provider.dlq import file_dead_letter, resolve_dead_letter

    _check_retries("default_args", args.get("retries"), profile, policy)
    # may refuse: before any change
    composed = composed_policy("default_args", args.get("retry_policy"), policy)
    args["retries"] = policy.retries_needed()
    args["retry_policy"] = composed
    args["retry_delay"] = policy.backoff.base  # used only where the policy is not consulted (a killed worker)
    args.setdefault("execution_timeout", profile.execution_timeout)
    args["on_failure_callback"] = with_callback(args.get("on_failure_callback"), file_dead_letter)
    args["on_success_callback"] = with_callback(args.get("on_success_callback"), resolve_dead_letter)


def _apply_to_operator(operator: Any, profile: Profile, policy: ClassifiedRetryPolicy) -> None:
    from airflow.sdk.bases.operator import BaseOperator
    from airflow.sdk.definitions.mappedoperator import MappedOperator

    from airflow_retry_provider.dlq import file_dead_letter, resolve_dead_letter

    if not isinstance(operator, (BaseOperator, MappedOperator)):
        raise TypeError(
            f"apply_profile: expected default_args, an operator or a @task result, got {operator!r}"
        )
    existing = getattr(operator, "retry_policy", None)
    explicit = None if operator.retries in (_default_retries(), _sized_by(existing)) else operator.retries
    _check_retries(f"task {operator.task_id!r}", explicit, profile, policy)
    # may refuse: before any change
    composed = composed_policy(f"task {operator.task_id!r}", existing, policy)
    operator.retries = policy.retries_needed()
    operator.retry_policy = composed
    # used only where the policy is not consulted (a killed worker)
    operator.retry_delay = policy.backoff.base
    if operator.execution_timeout is None:
        operator.execution_timeout = profile.execution_timeout
    operator.on_failure_callback = with_callback(operator.on_failure_callback, file_dead_letter)
    operator.on_success_callback = with_callback(operator.on_success_callback, resolve_dead_letter)
    declared = delivery_param(policy)
    params = getattr(operator, "params", None)
    if declared and params is not None and DELIVERY_PARAM not in params:  # a hand-written one wins
        params[DELIVERY_PARAM] = declared


def delivery_param(policy: ClassifiedRetryPolicy) -> dict[str, Any]:
    """What the dead-letter impact (``dlq/impact.py``) reads of ``policy`` through the REST API, which
    does not show a task's ``retry_policy``: its ``DeliveryDeadline`` and durations, as the task
    param ``retry_provider_delivery`` (empty when there is nothing to say)."""
    value: dict[str, Any] = {}
    if isinstance(policy.deadline, DeliveryDeadline):
        deadline = policy.deadline
        value.update(at=deadline.at, timezone=deadline.timezone, days_after=deadline.days_after)
    if policy.expected_duration:
        value["expected_duration_seconds"] = int(policy.expected_duration.total_seconds())
    if policy.validation:
        value["validation_seconds"] = int(policy.validation.total_seconds())
    return value


def _default_retries() -> int:
    """The ``retries`` an operator gets when nobody sets it (``[core] default_task_retries``)."""
    from airflow.sdk.definitions._internal.abstractoperator import DEFAULT_RETRIES

    return int(DEFAULT_RETRIES)


def _sized_by(existing: Any) -> int | None:
    """The ``retries`` a profile applied before set (ours alone, or ours in a 3.4 chain), else None:
    applying a profile again replaces that sizing instead of reading it as the author's."""
    policies = [existing, *getattr(existing, "policies", ())]
    ours = [p for p in policies if isinstance(p, ClassifiedRetryPolicy)]
    return ours[-1].retries_needed() if ours else None


def composed_policy(where: str, existing: Any, policy: ClassifiedRetryPolicy) -> Any:
    """``policy`` after the ``retry_policy`` already at ``where``: a chain on Airflow 3.4, an error on 3.3.

    None or one of ours (a profile applied again): replaced by ``policy``. Any other policy (a
    chain, Airflow's ``ExceptionRetryPolicy``, common-ai's ``LLMRetryPolicy``, ...) decides first;
    the profile's policy decides what it leaves (``DEFAULT``). The chain remembers each try's
    decision, so a letter filed after the author's policy decided names it and its reason.
    """
    if existing is None or isinstance(existing, ClassifiedRetryPolicy):
        return policy
    chain: Any = _remembering_chain()
    if chain is not None and isinstance(existing, chain):  # a profile applied again: it replaces ours
        kept = [p for p in existing.policies if not isinstance(p, ClassifiedRetryPolicy)]
        return chain([*kept, policy])
    if chain is None:
        raise ProfileConflictError(
            f"{where}: retry_policy={type(existing).__name__} is already set and apply_profile would "
            f"replace it with ClassifiedRetryPolicy (profile {policy.profile.name if policy.profile else None!r}); "
            "Airflow 3.3 cannot chain retry policies (3.4's ChainRetryPolicy can): remove one of them"
        )
    return chain([existing, policy])


@functools.cache
def _remembering_chain() -> type | None:
    """Airflow's ``ChainRetryPolicy`` (3.4) that remembers the decision of each try; None on 3.3."""
    base = chain_policy()
    if base is None:
        return None

    class ProfileChainRetryPolicy(base):  # type: ignore[misc,valid-type]
        """The author's retry policy, then the profile's (built by ``apply_profile``).

        ``decision_for(context, try_number)`` gives the decision the chain returned for that try
        (its reason names the policy that decided), for the dead-letter callback.
        """

        def __init__(self, policies: Sequence[Any]) -> None:
            super().__init__(policies)
            self._decisions: dict[tuple[Any, ...], Any] = {}

        def evaluate(
            self, exception: BaseException, try_number: int, max_tries: int, context: Any = None
        ) -> Any:
            decision = super().evaluate(exception, try_number, max_tries, context)
            _remember(self._decisions, context, try_number, decision)
            return decision

        def decision_for(self, context: Mapping[str, Any], try_number: int) -> Any:
            return self._decisions.get(_ti_key(context, try_number))

    return ProfileChainRetryPolicy
