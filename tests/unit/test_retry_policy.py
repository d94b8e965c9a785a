"""ClassifiedRetryPolicy and apply_profile: the Airflow edge of the policy core (no database)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pendulum
import pytest
from airflow.sdk import DAG, RetryPolicy, task
from airflow.sdk.definitions.retry_policy import RetryAction

from airflow_retry_provider import ClassifiedRetryPolicy, apply_profile
from airflow_retry_provider.dlq.callback import file_dead_letter, resolve_dead_letter
from airflow_retry_provider.identity import make_work_unit_key
from airflow_retry_provider.policy import PROFILES, Backoff
from airflow_retry_provider.retry_policy import DeliveryDeadline, ProfileConflictError

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=timezone.utc)
START = datetime(2026, 11, 28, 10, 0, tzinfo=timezone.utc)
END = datetime(2026, 11, 29, 10, 0, tzinfo=timezone.utc)


def _context(try_number=1, retries=2, start=START, end=END, run_id="scheduled__2026-11-29", map_index=-1):
    ti = SimpleNamespace(
        dag_id="sales", run_id=run_id, task_id="load", map_index=map_index, try_number=try_number
    )
    return {
        "ti": ti,
        "task": SimpleNamespace(retries=retries),
        "data_interval_start": start,
        "data_interval_end": end,
    }


def _policy(**kwargs) -> ClassifiedRetryPolicy:
    return ClassifiedRetryPolicy("report", clock=lambda: NOW, **kwargs)


def test_is_an_airflow_retry_policy():
    """It plugs into Airflow's retry_policy hook and can be built without arguments."""
    assert isinstance(ClassifiedRetryPolicy(), RetryPolicy)


def test_retryable_failure_gets_our_delay_seeded_by_the_data_interval():
    """A 429 is retried after Backoff.delay(attempt, work-unit key), with a readable reason."""
    exc = RuntimeError("429 Too Many Requests")
    exc.status_code = 429  # type: ignore[attr-defined]
    decision = _policy().evaluate(exc, try_number=1, max_tries=2, context=_context())
    key = make_work_unit_key("sales", "load", -1, START, END, "scheduled__2026-11-29")
    expected = PROFILES["report"].backoff.delay(1, key)
    assert decision.action == RetryAction.RETRY
    assert decision.retry_delay == expected
    after = (NOW + expected).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert (
        decision.reason == f"[attempt 2/3] [after {after}] [rule http-rate-limited] [profile report] "
        "retryable/rate-limited: RuntimeError: 429 Too Many Requests"
    )


def test_seed_ignores_try_number_and_run_id_when_the_interval_is_known():
    """Two runs of one data interval (e.g. a re-trigger) draw the same jitter; another interval differs."""
    exc = ConnectionResetError("reset")
    one = _policy().evaluate(exc, 1, 2, _context(run_id="a"))
    same = _policy().evaluate(exc, 1, 2, _context(run_id="b"))
    other = _policy().evaluate(exc, 1, 2, _context(start=END, end=END + timedelta(days=1)))
    assert one.retry_delay == same.retry_delay
    assert one.retry_delay != other.retry_delay


def test_identity_falls_back_to_run_id_without_a_data_interval():
    """With no data interval (a trigger without logical date) the run id seeds the jitter."""
    exc = ConnectionResetError("reset")
    a = _policy().evaluate(exc, 1, 2, _context(start=None, end=None, run_id="manual__a"))
    b = _policy().evaluate(exc, 1, 2, _context(start=None, end=None, run_id="manual__b"))
    key = make_work_unit_key("sales", "load", -1, None, None, "manual__a")
    assert key.endswith("run=manual__a")
    assert a.retry_delay == PROFILES["report"].backoff.delay(1, key)
    assert a.retry_delay != b.retry_delay


def test_a_cleared_task_starts_its_backoff_afresh():
    """After a clear (max_tries = try_number + retries) the first new try counts as attempt 1."""
    exc = ConnectionResetError("reset")
    # tries 1-3 were used; the clear set max_tries = 3 + 2 = 5; try 4 fails now
    decision = _policy().evaluate(exc, try_number=4, max_tries=5, context=_context(try_number=4))
    first = _policy().evaluate(exc, try_number=1, max_tries=2, context=_context())
    assert decision.retry_delay == first.retry_delay
    assert decision.reason.startswith("[attempt 2/3]")


def test_poison_fails_at_once():
    """A missing table fails the task without burning attempts."""
    decision = _policy().evaluate(RuntimeError("table x not found"), 1, 2, _context())
    assert decision.action == RetryAction.FAIL
    assert decision.reason.startswith(
        "[attempt 1/3] [rule message-not-found] [profile report] dead letter poison/not-found"
    )


def _marked_context(task: object) -> dict:
    return {**_context(), "task": task}


class _IdempotentOperator:
    """Stands for an operator built on IdempotentMixin: the policy reads only the class marker."""

    safe_to_repeat = True
    retries = 2


def _idempotent_function() -> None:
    """Stands for @idempotent's wrapper."""


_idempotent_function.safe_to_repeat = True  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("policy", "context", "retried"),
    [
        (ClassifiedRetryPolicy("pipeline", clock=lambda: NOW), _context(), False),  # pipeline writes
        (ClassifiedRetryPolicy("report", clock=lambda: NOW), _context(), True),  # reports re-run queries
        (
            ClassifiedRetryPolicy("dashboard", clock=lambda: NOW),
            _context(retries=1),
            True,
        ),  # so do dashboards
        (ClassifiedRetryPolicy(clock=lambda: NOW), _context(), False),  # no profile, no marker
        (
            ClassifiedRetryPolicy("pipeline", clock=lambda: NOW),
            _marked_context(_IdempotentOperator()),
            True,
        ),  # IdempotentMixin, medallion and remote-job operators are safe by construction
        (
            ClassifiedRetryPolicy("pipeline", clock=lambda: NOW),
            _marked_context(SimpleNamespace(retries=2, python_callable=_idempotent_function)),
            True,
        ),  # a @task under @idempotent
        (
            ClassifiedRetryPolicy("report", safe_to_repeat=False, clock=lambda: NOW),
            _context(),
            False,
        ),  # an explicit answer beats the profile
        (
            ClassifiedRetryPolicy("pipeline", safe_to_repeat=True, clock=lambda: NOW),
            _context(),
            True,
        ),  # and the task's
    ],
)
def test_a_timeout_is_retried_only_in_work_safe_to_repeat(policy, context, retried):
    """A timeout is retried with backoff in safe work, else filed as unknown-outcome."""
    decision = policy.evaluate(TimeoutError("read timed out"), 1, 2, context)
    if retried:
        assert decision.action == RetryAction.RETRY
        assert "] unknown outcome, safe to repeat: unknown/timeout: TimeoutError: read timed out" in (
            decision.reason
        )
    else:
        assert decision.action == RetryAction.FAIL
        assert "dead letter unknown-outcome: unknown/timeout" in decision.reason


def test_safe_to_repeat_is_checked():
    """safe_to_repeat must be True, False or None."""
    with pytest.raises(ValueError, match="safe_to_repeat must be True, False or None, got 'yes'"):
        ClassifiedRetryPolicy(safe_to_repeat="yes")  # type: ignore[arg-type]


def test_retry_after_sets_the_delay_and_the_reason():
    """A 429 with Retry-After 120 s waits max(backoff, 120 s), capped, and says so."""
    exc = RuntimeError("429 Too Many Requests")
    exc.response = SimpleNamespace(status_code=429, headers={"Retry-After": "4000"})  # type: ignore[attr-defined]
    fast = Backoff(base=timedelta(seconds=1), cap=timedelta(minutes=10), jitter=0)
    decision = ClassifiedRetryPolicy("report", backoff=fast, clock=lambda: NOW).evaluate(
        exc, 1, 2, _context()
    )
    assert decision.retry_delay == timedelta(minutes=10)
    assert "] Retry-After 4000 s (capped at 10m): retryable/rate-limited:" in decision.reason


def test_last_attempt_is_exhausted():
    """On the profile's last attempt a retryable failure goes to the dead-letter queue as exhausted."""
    decision = _policy().evaluate(ConnectionResetError("reset"), 3, 2, _context(try_number=3))
    assert decision.action == RetryAction.FAIL
    assert "exhausted after 3 attempts" in decision.reason


def test_works_without_context():
    """context=None still decides (seeded with a constant, first generation assumed)."""
    decision = _policy().evaluate(ConnectionResetError("reset"), 1, 2, None)
    assert decision.action == RetryAction.RETRY
    assert decision.retry_delay == PROFILES["report"].backoff.delay(1, "no-context")


def test_evaluate_never_raises():
    """An internal error is logged and the task fails for review instead of retrying blindly."""

    def broken_clock() -> datetime:
        raise RuntimeError("clock exploded")

    policy = ClassifiedRetryPolicy("report", clock=broken_clock)
    decision = policy.evaluate(ConnectionResetError("reset"), 1, 2, _context())
    assert decision.action == RetryAction.FAIL
    assert decision.reason.startswith("[policy error] RuntimeError")


@pytest.mark.parametrize(
    ("clock", "deadline"),
    [
        (lambda: NOW.replace(tzinfo=None), None),  # a naive clock
        (lambda: NOW, lambda context: datetime(2026, 12, 1, 9)),  # a naive deadline
    ],
    ids=["naive-clock", "naive-deadline"],
)
def test_a_naive_clock_or_deadline_fails_for_review(clock, deadline):
    """Naive datetimes would misplace the retry by the machine's UTC offset: fail, named, instead."""
    policy = ClassifiedRetryPolicy("report", clock=clock, deadline=deadline)
    decision = policy.evaluate(ConnectionResetError("reset"), 1, 2, _context())
    assert decision.action == RetryAction.FAIL
    assert decision.reason.startswith("[policy error] ValueError")


@pytest.mark.parametrize("field", ["expected_duration", "validation"])
def test_durations_are_checked_when_the_policy_is_built(field):
    """A negative duration is an error at DAG parse time, naming the field and the value."""
    with pytest.raises(ValueError, match=rf"{field} must be a timedelta >= 0, got -1 s$"):
        ClassifiedRetryPolicy("report", **{field: timedelta(seconds=-1)})


def test_delivery_deadline_makes_a_late_retry_infeasible():
    """A retry that cannot finish before 09:00 Brasília the day after the interval is not attempted."""
    deadline = DeliveryDeadline(at="09:00", timezone="America/Sao_Paulo", days_after=1)
    assert deadline.resolve(_context()) == pendulum.datetime(2026, 11, 30, 9, 0, tz="America/Sao_Paulo")
    policy = _policy(
        deadline=deadline, expected_duration=timedelta(hours=1), validation=timedelta(minutes=30)
    )
    # 10:00Z is 07:00 in Brasília: 07:0x + 1h30 = 08:3x, before 09:00 -> retry
    assert policy.evaluate(ConnectionResetError("reset"), 1, 2, _context()).action == RetryAction.RETRY
    late = ClassifiedRetryPolicy(
        "report",
        clock=lambda: NOW + timedelta(hours=1, minutes=20),
        deadline=deadline,
        expected_duration=timedelta(hours=1),
        validation=timedelta(minutes=30),
    )
    decision = late.evaluate(ConnectionResetError("reset"), 1, 2, _context())
    assert decision.action == RetryAction.FAIL and "deadline-infeasible" in decision.reason


@pytest.mark.parametrize(
    ("field", "value"),
    [("at", "9am"), ("timezone", "Mars/Olympus")],  # each field validated with its value in the message
)
def test_delivery_deadline_rejects_bad_input(field, value):
    """A bad deadline is a clear error naming the field and value at DAG parse time."""
    with pytest.raises(ValueError, match=field) as info:
        DeliveryDeadline(**{field: value})
    assert value in str(info.value)


def test_apply_profile_to_default_args_keeps_existing_callbacks():
    """default_args get retries (both budgets: report's 2 retries and the infra allowance's 2), the policy, the timeout and our callbacks added to the author's."""

    def mine(context):
        return None

    args = apply_profile({"owner": "data", "on_failure_callback": mine}, "report")
    assert args["retries"] == 4 and isinstance(args["retry_policy"], ClassifiedRetryPolicy)
    assert args["execution_timeout"] == PROFILES["report"].execution_timeout
    assert args["on_failure_callback"] == [mine, file_dead_letter]
    assert args["on_success_callback"] == [resolve_dead_letter]
    assert apply_profile(args, "report")["on_failure_callback"] == [mine, file_dead_letter]  # idempotent


def test_apply_profile_refuses_contradicting_retries():
    """retries set by hand that contradicts the profile is an error naming both."""
    with pytest.raises(ProfileConflictError, match=r"retries=5 contradicts retry profile 'report'"):
        apply_profile({"retries": 5}, "report")


def test_apply_profile_to_task_and_operator():
    """A @task call's result and a classic operator both get the profile; a conflicting operator fails at parse time."""
    from airflow.providers.standard.operators.empty import EmptyOperator

    with DAG("profile_parse", schedule=None, start_date=pendulum.datetime(2026, 1, 1)):

        @task
        def work() -> None:
            return None

        call = apply_profile(work(), "dashboard", backoff=Backoff(base=timedelta(seconds=1)))
        op = call.operator
        assert op.retries == 3 and op.execution_timeout == PROFILES["dashboard"].execution_timeout
        assert op.retry_policy.backoff.base == timedelta(seconds=1)
        assert file_dead_letter in op.on_failure_callback
        empty = apply_profile(EmptyOperator(task_id="e"), "pipeline")
        assert empty.retries == 3
        with pytest.raises(ProfileConflictError, match="task 'bad'"):
            apply_profile(EmptyOperator(task_id="bad", retries=2), "report")  # the old sizing, no allowance


def test_idempotent_work_is_marked_safe_to_repeat():
    """The ledger's decorator and mixin, the medallion operators and the remote-job operator mark themselves safe."""
    from airflow_retry_provider.ledger import IdempotentMixin, idempotent
    from airflow_retry_provider.operators.extraction import PostgresExtractionOperator
    from airflow_retry_provider.operators.medallion import PostgresBronzeLoadOperator, SqlTransformOperator
    from airflow_retry_provider.operators.remote_jobs import RemoteJobOperator

    @idempotent(key="unit")
    def write() -> None:
        """A write under the ledger."""

    marked = [
        IdempotentMixin,
        PostgresBronzeLoadOperator,
        SqlTransformOperator,
        PostgresExtractionOperator,
        RemoteJobOperator,
        write,
    ]
    assert all(getattr(item, "safe_to_repeat", False) is True for item in marked)


@pytest.mark.parametrize("failure", ["retryable", "poison"])
def test_the_retry_reason_is_masked_like_a_letter(failure):
    """A value Airflow's masker knows (a connection password) never reaches the reason Airflow stores."""
    from airflow.sdk.log import mask_secret

    secret = "Pr1vate-pa55-for-reason-test"
    mask_secret(secret)
    text = f"could not connect as etl with {secret}" if failure == "retryable" else f"not found: {secret}"
    exc = ConnectionResetError(104, text) if failure == "retryable" else FileNotFoundError(text)
    decision = _policy().evaluate(exc, try_number=1, max_tries=2, context=_context())
    assert decision.reason is not None
    assert secret not in decision.reason
    assert "***" in decision.reason


def test_the_retry_reason_holds_no_nul_and_no_lone_surrogate():
    """PostgreSQL refuses NUL in text: the reason Airflow stores has it replaced, the rest kept."""
    exc = ConnectionResetError(104, "reset\x00by peer \ud800 here")
    decision = _policy().evaluate(exc, try_number=1, max_tries=2, context=_context())
    assert decision.reason is not None
    assert "\x00" not in decision.reason and "\ud800" not in decision.reason
    assert "reset\ufffdby peer \ufffd here" in decision.reason
    decision.reason.encode("utf-8")  # storable


def test_apply_profile_writes_the_delivery_as_a_task_param_the_rest_api_shows():
    """A DeliveryDeadline and the durations become the param retry_provider_delivery; a hand-written one wins."""
    from airflow.providers.standard.operators.empty import EmptyOperator

    from airflow_retry_provider.policy.impact import DELIVERY_PARAM, parse_delivery

    deadline = DeliveryDeadline(at="09:00", timezone="UTC", days_after=1)
    with DAG("profile_delivery", schedule=None, start_date=pendulum.datetime(2026, 1, 1)):
        declared = apply_profile(
            EmptyOperator(task_id="publish"),
            "report",
            deadline=deadline,
            expected_duration=timedelta(minutes=10),
            validation=timedelta(minutes=2),
        )
        plain = apply_profile(EmptyOperator(task_id="plain"), "report")
        mine = {"at": "07:00", "timezone": "UTC"}
        by_hand = apply_profile(
            EmptyOperator(task_id="hand", params={DELIVERY_PARAM: mine}), "report", deadline=deadline
        )
    value = declared.params[DELIVERY_PARAM]
    assert value == {
        "at": "09:00",
        "timezone": "UTC",
        "days_after": 1,
        "expected_duration_seconds": 600,
        "validation_seconds": 120,
    }
    spec = parse_delivery("p", value)
    assert spec.resolve(datetime(2026, 12, 3, tzinfo=timezone.utc)) == datetime(
        2026, 12, 4, 9, 0, tzinfo=timezone.utc
    )
    assert DELIVERY_PARAM not in plain.params
    assert by_hand.params[DELIVERY_PARAM] == mine


@pytest.mark.parametrize(
    ("argument", "value", "accepted"),
    [
        ("deadline", "09:00", "DeliveryDeadline"),  # a time of day written as text
        ("deadline", 9, "DeliveryDeadline"),  # an hour as a number
        ("backoff", 300, "Backoff"),  # seconds instead of a Backoff
        ("clock", "utc", "callable"),  # not a function
        ("rules", "not-found", "list of Rule"),  # a rule name instead of rules
        ("max_attempts", "3", "integer >= 1"),  # a number as text
        ("profile", 3, "profile name or a Profile"),  # a ceiling instead of a profile
    ],
)
def test_apply_profile_refuses_a_wrong_type_where_it_is_called(argument, value, accepted):
    """A wrong type for any argument fails at the call, naming the argument, the value and what is accepted."""
    kwargs = {"profile": "report"} | {argument: value}
    with pytest.raises((TypeError, ValueError)) as info:
        apply_profile({}, kwargs.pop("profile"), **kwargs)
    message = str(info.value)
    assert argument in message and repr(value) in message and accepted in message


def test_a_policy_error_files_a_letter_that_says_so():
    """A policy that raises while deciding files a letter of category policy-error naming the error, not 'exhausted'."""
    from airflow_retry_provider.dlq.callback import build_letter

    def broken_clock() -> datetime:
        raise RuntimeError("clock exploded")

    policy = ClassifiedRetryPolicy("report", clock=broken_clock)
    context = _context() | {"exception": ConnectionResetError("reset")}
    context["task"] = SimpleNamespace(retries=2, retry_policy=policy, task_id="load")
    context["ti"].max_tries = 2
    policy.evaluate(context["exception"], 1, 2, context)
    letter = build_letter(context)
    assert (letter.category, letter.rule) == ("policy-error", "policy-error")
    assert "exhausted" not in letter.reason
    assert letter.reason.startswith(
        "[attempt 1/3] dead letter policy-error: the retry policy could not decide"
    )
    assert "RuntimeError: clock exploded" in letter.reason


@pytest.mark.parametrize(
    ("enabled", "allowance", "retries"),
    [
        ("true", None, 4),  # report: 2 retries of its own + the default allowance of 2
        ("true", 0, 2),  # an allowance of 0 sizes retries as before the allowance
        ("true", 5, 7),  # a larger allowance, from apply_profile's keyword
        ("false", None, 2),  # the kill switch: no allowance anywhere
    ],
)
def test_retries_hold_both_budgets_unless_the_kill_switch_is_off(monkeypatch, enabled, allowance, retries):
    """apply_profile sizes retries as max_attempts - 1 + infra_allowance; the kill switch makes the allowance 0."""
    monkeypatch.setenv("AIRFLOW__RETRY_PROVIDER__INFRA_ALLOWANCE_ENABLED", enabled)
    kwargs = {} if allowance is None else {"infra_allowance": allowance}
    args = apply_profile({}, "report", **kwargs)
    assert args["retries"] == retries
    assert args["retry_policy"].retries_needed() == retries


@pytest.mark.parametrize("value", [-1, 11, 1.5, True, "2"])
def test_a_bad_infra_allowance_is_an_error_naming_it(value):
    """ClassifiedRetryPolicy(infra_allowance=...) refuses a value that is no integer from 0 to 10, naming it."""
    with pytest.raises(
        ValueError, match=r"infra_allowance must be an integer from 0 to 10, got " + re.escape(repr(value))
    ):
        ClassifiedRetryPolicy("report", infra_allowance=value)


def test_a_policy_without_a_ceiling_has_no_allowance():
    """Without a profile or max_attempts the task's own retries is the ceiling: every try spends one."""
    policy = ClassifiedRetryPolicy()
    assert (policy.infra_allowance, policy.retries_needed()) == (0, None)
