"""The failure callback that files a dead letter, and the success callback that resolves one.

Both run in the worker (or, for a task that died outside the task runner, in the
dag-processor). They use the provider's PostgreSQL connection, never Airflow's ORM, and make no
REST call: filing is one short transaction (the letter, its event, and its place in the impact
queue, whose NOTIFY wakes the api-server's impact thread: issue 58), then the new-root-cause alert's
outbox. A PostgreSQL with no connection left for us (SQLSTATE 53300, or 57P03 while it starts) or
refusing connections is waited out for up to :func:`crowded_budget` (:data:`CROWDED_SECONDS`, and at
most half of Airflow's ``[core] task_success_overtime``: 10 s by default), each pause jittered
deterministically per task instance so a storm's callbacks do not come back together; other errors
are retried briefly. If PostgreSQL stays unreachable the whole redacted record is logged on one
line, which says whether the sweeper will file the letter later (its DAG is tagged or listed,
``dlq/managed.py``) or the line is the failure's only record.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from airflow_retry_provider import metrics, settings
from airflow_retry_provider.airflow_compat import in_dag_test, policies_in, policy_with
from airflow_retry_provider.dlq.models import MANAGED_TAG, SWEEP_VARIABLE, NewLetter, parse_dag_list
from airflow_retry_provider.identity import key_parts, make_work_unit_key
from airflow_retry_provider.masking import mask
from airflow_retry_provider.policy import Backoff, Classification, DeadLetter, classify, fingerprint, redact
from airflow_retry_provider.policy.decide import DEAD_LETTER_EXHAUSTED, letter_reason
from airflow_retry_provider.policy.text import storable

if TYPE_CHECKING:  # imported where a letter is filed: a task that succeeds never loads it
    from airflow_retry_provider.dlq.models import ClosedReplay
    from airflow_retry_provider.dlq.store import DeadLetterStore, FileResult

log = logging.getLogger(__name__)

WRITE_ATTEMPTS = 3
WRITE_PAUSE_SECONDS = 0.5
CROWDED_SECONDS = 60.0
"""How long filing waits out a PostgreSQL with no connection for it (then the sweeper files the letter);
in a task's failure callback, at most :func:`crowded_budget`."""
CROWDED_BACKOFF = Backoff(base=timedelta(seconds=0.5), multiplier=2, cap=timedelta(seconds=8), jitter=0.5)
"""The pauses while PostgreSQL is crowded: 0.5, 1, 2, 4, 8, 8 ... s, each up to half off by the FNV-1a
hash of the task instance's try (the spec's deterministic jitter), so a storm spreads its retries."""
_CROWDED_STATES = frozenset({"53300", "57P03"})  # too_many_connections, cannot_connect_now
_CROWDED_WORDS = (
    "too many clients",
    "too many connections",
    "remaining connection slots are reserved",
    "the database system is starting up",
    "connection refused",
)
UNFILED_EVENT = "airflow-retry-provider: dead letter not written"

# What this task process's callbacks did for a try, by (dag_id, run_id, task_id, map_index,
# try_number): the letter filed, the replay its outcome closed. The lineage facet (``lineage/``) reads them
# after the callbacks ran, in the same process (or a fork of it), with no I/O of its own.
_filed: dict[tuple[Any, ...], int] = {}
_replays: dict[tuple[Any, ...], ClosedReplay] = {}
_REMEMBERED_TRIES = 256


def _try_key(ti: Any) -> tuple[Any, ...]:
    return (ti.dag_id, ti.run_id, ti.task_id, getattr(ti, "map_index", -1), ti.try_number)


def _keep(memory: dict[tuple[Any, ...], Any], ti: Any, value: Any) -> None:
    memory[_try_key(ti)] = value
    while len(memory) > _REMEMBERED_TRIES:
        del memory[next(iter(memory))]


def filed_letter(ti: Any) -> int | None:
    """The id of the letter this process's failure callback filed for ``ti``'s current try, if any."""
    return _filed.get(_try_key(ti))


def closed_replay(ti: Any) -> ClosedReplay | None:
    """The replay ``ti``'s current try was the outcome of, as this process's callbacks closed it
    (resolved by a success, or failed again), if any."""
    return _replays.get(_try_key(ti))


def _setting(context: Mapping[str, Any], name: str) -> str | None:
    """``name`` from the task (attribute) or the run's params, e.g. workspace_id, code_version, payload_ref."""
    value = getattr(context.get("task"), name, None)
    if value is None:
        params = context.get("params") or {}
        value = params.get(name) if hasattr(params, "get") else None
    return str(value) if value is not None else None


def build_letter(context: Mapping[str, Any], filed_by: str = "callback") -> NewLetter:
    """Turn a failure ``context`` into the record to file (pure apart from reading the context).

    Every free-text field is redacted here, once (pages, the JSON API and exports show it as
    stored), and every text field is made storable (``NewLetter.storable``: NUL and lone
    surrogates replaced), so the row, the alert and the log line can all be written.
    """
    ti = context["ti"]
    exception = context.get("exception")
    task = context.get("task")
    policy: Any = policy_with(task, "evaluation_for")  # the task's, or one in its chain (3.4)
    evaluation = None
    if policy is not None:
        evaluation = policy.evaluation_for(context, ti.try_number)
    if evaluation is not None:
        classification = evaluation.classification
        attempts_used, max_attempts = evaluation.attempt, evaluation.max_attempts
    else:
        classification = _classify_without_policy(exception)
        max_tries = getattr(ti, "max_tries", None)
        attempts_used = int(ti.try_number)
        max_attempts = int(max_tries) + 1 if isinstance(max_tries, int) else None
    decision = evaluation.decision if evaluation is not None else None
    failure = (
        f"{classification.failure_class}/{classification.category}: "
        f"{classification.exception_type}: {classification.message}"
    )
    rule = classification.rule
    policy_error = (
        policy.error_for(context, ti.try_number)
        if evaluation is None and policy is not None and hasattr(policy, "error_for")
        else None
    )
    decided_elsewhere = (
        None
        if evaluation is not None or policy_error is not None
        else other_policy_decision(task, context, ti.try_number)
    )
    if isinstance(decision, DeadLetter):
        category, reason = decision.category, decision.reason
    elif policy_error is not None:  # our policy raised while deciding: the task failed for review
        category = rule = POLICY_ERROR
        what = (
            f"the retry policy could not decide ({redact(policy_error, limit=200)}), "
            f"so the task failed for review; {failure}"
        )
        reason = letter_reason(what, attempt=attempts_used, max_attempts=max_attempts, category=POLICY_ERROR)
    elif decided_elsewhere is not None:  # another policy (alone, or before ours in a chain) decided
        name, said = decided_elsewhere
        # our policy's ceiling when it has one (Airflow's max_tries also holds the infra allowance)
        max_attempts = getattr(policy, "max_attempts", None) or max_attempts
        left = max_attempts is None or attempts_used < max_attempts
        category = OTHER_POLICY if left else DEAD_LETTER_EXHAUSTED
        rule = f"policy:{name}"
        what = f"{said or name} ({failure})"
        reason = letter_reason(what, attempt=attempts_used, max_attempts=max_attempts, category=category)
    else:  # a retry was allowed but Airflow had no attempt left, or no policy decided
        category = DEAD_LETTER_EXHAUSTED
        reason = letter_reason(failure, attempt=attempts_used, max_attempts=max_attempts, category=category)
    parts = key_parts(context)
    return NewLetter(
        dag_id=parts["dag_id"],
        run_id=parts["run_id"],
        task_id=parts["task_id"],
        map_index=parts["map_index"],
        try_number=int(ti.try_number),
        attempts_used=attempts_used,
        max_attempts=max_attempts,
        work_unit_key=make_work_unit_key(**parts, version=_setting(context, "processing_version")),
        data_interval_start=parts["data_interval_start"],
        data_interval_end=parts["data_interval_end"],
        workspace_id=_redact_optional(_setting(context, "workspace_id")),
        failure_class=classification.failure_class,
        category=category,
        rule=rule,
        exception_type=classification.exception_type,
        message=mask(classification.message),
        reason=mask(reason)[:500],
        fingerprint=fingerprint(classification),
        code_version=_redact_optional(_setting(context, "code_version")),
        payload_ref=_redact_optional(_setting(context, "payload_ref")),
        filed_by=filed_by,
        **ran_version(ti),
    ).storable()  # NUL or a lone surrogate anywhere (message, ids from params) would lose the row


# The category (and rule) of a letter filed after the retry policy itself raised while deciding
# (a bug or a bad argument of its own): the failure was never judged, so nothing says it is exhausted.
POLICY_ERROR = "policy-error"

# The category of a letter filed after a policy other than ClassifiedRetryPolicy decided to fail
# with attempts left (Airflow's ExceptionRetryPolicy, common-ai's LLM or classifier policy, ...).
OTHER_POLICY = "other-policy"


def other_policy_decision(
    task: Any, context: Mapping[str, Any], try_number: int
) -> tuple[str, str | None] | None:
    """Which policy other than ours decided this try, and its reason if known; None when no other policy is set.

    A chain built by ``apply_profile`` remembers the decision it returned (``decision_for``: the
    reason names the policy that decided, as Airflow's ``ChainRetryPolicy`` writes it); any other
    policy is known by its class name only (Airflow 3.4 keeps its reason on the task instance).
    """
    policy = getattr(task, "retry_policy", None)
    if policy is None:
        return None
    remembered = getattr(policy, "decision_for", None)
    decision = remembered(context, try_number) if remembered is not None else None
    if decision is not None:
        if str(getattr(decision.action, "value", decision.action)) == "default" or not decision.reason:
            return None  # no policy took a position: Airflow's own retries ran out
        said = redact(str(decision.reason), limit=400)  # the other policy's text: untrusted, as a failure's
        return said.split(":", 1)[0].strip(), said
    others = [
        p for p in policies_in(policy) if not hasattr(p, "evaluation_for") and not hasattr(p, "policies")
    ]
    if not others:  # only ours, and it did not evaluate this try (a killed worker): the default rules
        return None
    return (type(others[0]).__name__ if len(others) == 1 else type(policy).__name__), None


def ran_version(ti: Any) -> dict[str, Any]:
    """The DAG version and bundle version the task instance ran, as the worker knows them.

    Airflow 3.3's ``RuntimeTaskInstance`` carries ``dag_version_id`` (a UUID, not the number: the
    sweeper looks the number up through the REST API) and, when the task runner parsed the DAG
    from its bundle, ``bundle_instance`` (``dag.test()`` has none). A versioned bundle (git) that
    was not asked for a version reports the one it checked out. Never raises: what cannot be read
    is None.
    """
    version_id = getattr(ti, "dag_version_id", None)
    bundle = getattr(ti, "bundle_instance", None)
    bundle_version = getattr(bundle, "version", None)
    if bundle is not None and bundle_version is None:
        try:
            bundle_version = bundle.get_current_version()
        except Exception:  # a bundle that cannot say (not versioned, checkout gone): unknown
            bundle_version = None
    return {
        "dag_version_id": str(version_id) if version_id else None,
        "bundle_name": str(name) if (name := getattr(bundle, "name", None)) else None,
        "bundle_version": str(bundle_version) if bundle_version else None,
    }


def _redact_optional(value: str | None) -> str | None:
    return mask(redact(value)) if value else value


def _classify_without_policy(exception: BaseException | str | None) -> Classification:
    if isinstance(exception, BaseException):
        return classify(exception)
    if exception:  # the dag-processor passes a message, e.g. a heartbeat timeout
        return Classification("unknown", "task-died", "no-exception", "TaskDied", redact(str(exception)))
    return Classification(
        "unknown", "task-died", "no-exception", "TaskDied", "the task died outside the runner"
    )


def file_letter(
    letter: NewLetter,
    store: DeadLetterStore,
    replay_cap: int,
    attempts: int = WRITE_ATTEMPTS,
    pause: float = WRITE_PAUSE_SECONDS,
    sleep: Callable[[float], None] = time.sleep,
    swept: Callable[[], str] | None = None,
    crowded_seconds: float = CROWDED_SECONDS,
) -> FileResult | None:
    """Write ``letter``, retrying; on failure log it whole (redacted) on one line and return None.

    A crowded or refusing PostgreSQL (:func:`crowded`) is waited out with :data:`CROWDED_BACKOFF`'s
    pauses (seeded by the letter's work unit and try) while they add up to at most ``crowded_seconds``;
    any other error is tried ``attempts`` times, ``pause`` doubling.

    :param swept: says, when the letter could not be written, whether the sweeper will file it
        (see :func:`sweeper_fate`); called only then. Without it the line says what the sweeper needs.
    """
    last: Exception | None = None
    attempt, waited = 0, 0.0
    seed = f"{letter.work_unit_key}#{letter.try_number}"
    while True:
        attempt += 1
        try:
            return store.file(letter, replay_cap)
        except Exception as exc:  # unreachable database, failover, ...: try again, then hand over
            last = exc
            if _no_connection(exc):  # no connection defined: trying again cannot help
                break
            if crowded(exc):
                wait = CROWDED_BACKOFF.delay(attempt, seed).total_seconds()
                if waited + wait > crowded_seconds:
                    break
            elif attempt >= attempts:
                break
            else:
                wait = pause * 2 ** (attempt - 1)
            sleep(wait)
            waited += wait
    if _no_connection(last) and in_dag_test():
        _say_not_filed_in_test(letter)
        return None
    record = {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in asdict(letter).items()}
    log.error(
        "%s (%s); %s: %s",
        UNFILED_EVENT,
        storable(mask(redact(f"{type(last).__name__}: {last}"))),
        swept() if swept is not None else _fate(letter.dag_id, None),
        json.dumps(record, sort_keys=True),
    )
    return None


def crowded_budget() -> float:
    """How long a failure callback may wait out a crowded PostgreSQL: :data:`CROWDED_SECONDS`, and at most
    half of Airflow's ``[core] task_success_overtime`` (20 s by default).

    Airflow runs the failure callback after the task reported its failed state, and terminates the task
    process once that overtime has passed: a callback still waiting then is killed with the process, its
    try left ``running`` and retried as if the task had died (a poison failure runs again), instead of
    being handed to the sweeper. Half leaves the rest of the callback (the filing's announcement) its time.
    """
    from airflow.sdk import conf

    try:
        overtime = conf.getint("core", "task_success_overtime", fallback=20)
    except ValueError:  # Airflow itself refuses to run with such a value
        overtime = 20
    return max(0.0, min(CROWDED_SECONDS, overtime / 2))


def crowded(exc: BaseException) -> bool:
    """PostgreSQL had no connection for us (SQLSTATE 53300 too many connections, 57P03 starting up) or
    refused to connect: waiting helps. Read from psycopg 3's ``sqlstate``, psycopg2's ``pgcode``, or the
    server's words (a connection that failed to open carries no code in psycopg2)."""
    code = getattr(exc, "sqlstate", None) or getattr(exc, "pgcode", None)
    if code in _CROWDED_STATES:
        return True
    text = str(exc)[:2000].lower()
    return type(exc).__name__ == "OperationalError" and any(words in text for words in _CROWDED_WORDS)


def _no_connection(exc: BaseException | None) -> bool:
    """The provider's connection is not defined here (Airflow's ``AirflowNotFoundException``)."""
    return type(exc).__name__ == "AirflowNotFoundException"


_TOLD_RUNS: set[tuple[str, str]] = set()


def _say_not_filed_in_test(letter: NewLetter) -> None:
    """Under ``dag.test()`` without the provider's connection: one info line per run, not an error per
    failure (no sweeper files a ``dag.test()`` run's letters; the policy's decisions are unchanged)."""
    from airflow_retry_provider.database import DEFAULT_CONN_ID

    run = (letter.dag_id, letter.run_id)
    if run in _TOLD_RUNS:
        return
    _TOLD_RUNS.add(run)
    log.info(
        "airflow-retry-provider: dead letters are not filed in this dag.test() run of %r: no connection %r "
        "(add it, on a PostgreSQL upgraded with `airflow-retry db upgrade`, to file them); the retry "
        "decisions are the same",
        letter.dag_id,
        DEFAULT_CONN_ID,
    )


def _fate(dag_id: str, listed: bool | None, why: str = "") -> str:
    if listed:
        return f"the sweeper will file it (DAG {dag_id!r} is listed in the Variable {SWEEP_VARIABLE})"
    if listed is None:
        return (
            f"the sweeper will file it only if DAG {dag_id!r} is tagged {MANAGED_TAG!r} or listed in the "
            f"Variable {SWEEP_VARIABLE}{why}; otherwise this line is the failure's only record"
        )
    return (
        f"NO sweeper will file it: DAG {dag_id!r} is neither tagged {MANAGED_TAG!r} nor listed in the "
        f"Variable {SWEEP_VARIABLE}; this line is the failure's only record"
    )


def files_dead_letters(task: Any) -> bool:
    """True if ``task`` (an operator) has the dead-letter failure callback ``apply_profile`` adds."""
    callbacks = getattr(task, "on_failure_callback", None)
    if callbacks is None:
        return False
    listed = list(callbacks) if isinstance(callbacks, (list, tuple)) else [callbacks]
    return any(callback is file_dead_letter for callback in listed)


def sweeper_fate(context: Mapping[str, Any], dag_id: str) -> str:
    """Whether the dead-letter sweeper will see this DAG, as the unfiled line says it.

    The DAG's tag (added by the provider's cluster policy when the DAG was parsed, ``dlq/managed.py``)
    is read from the context; else the Variable ``airflow_retry_dlq_sweep_dags``. Never raises.
    """
    dag = context.get("dag") or getattr(context.get("task"), "dag", None)
    if MANAGED_TAG in (getattr(dag, "tags", None) or ()):
        return f"the sweeper will file it (DAG {dag_id!r} is tagged {MANAGED_TAG!r})"
    # the tag is added where the dag-processor parses the DAG, not in the task's own parse: a DAG with a
    # task that files dead letters carries it there, and the sweeper reads the dag-processor's tags
    if any(files_dead_letters(task) for task in (getattr(dag, "tasks", None) or [context.get("task")])):
        return (
            f"the sweeper will file it (DAG {dag_id!r} applies a retry profile, so the provider's cluster "
            f"policy tags it {MANAGED_TAG!r} where the dag-processor parses it)"
        )
    try:
        from airflow.sdk import Variable

        listed = dag_id in parse_dag_list(Variable.get(SWEEP_VARIABLE, default=None))
    except Exception as exc:  # the Variable cannot be read (the API is down too) or is not a list
        return _fate(dag_id, None, f" (the Variable could not be read: {type(exc).__name__})")
    return _fate(dag_id, listed)


def under_outage(context: Mapping[str, Any], letter: NewLetter) -> NewLetter:
    """A letter filed while its task's dependency is down names the dependency as its root cause.

    Its fingerprint becomes the outage's, so every letter of one outage is one group on the Dead
    letters page and one root-cause alert; its reason starts with the dependency and the outage.
    """
    from airflow_retry_provider.breaker.guard import outage_cause

    cause = outage_cause(context)
    if cause is None:
        return letter
    return replace(letter, fingerprint=cause.fingerprint, reason=(cause.note + letter.reason)[:500])


def file_dead_letter(context: Mapping[str, Any]) -> None:
    """``on_failure_callback``: file the failed task instance in the dead-letter queue."""
    letter = under_outage(context, build_letter(context))
    from airflow_retry_provider.database import ProviderDatabase, close_kept
    from airflow_retry_provider.dlq.store import DeadLetterStore

    # one connection for the letter, its impact and its alerts, the one the retry policy recorded the
    # try on: a storm's failing task processes each open one, not two (nor six)
    try:
        _file_and_tell(context, letter, DeadLetterStore(ProviderDatabase.kept()))
    finally:
        close_kept()


def _file_and_tell(context: Mapping[str, Any], letter: NewLetter, store: DeadLetterStore) -> None:
    from airflow_retry_provider import announce
    from airflow_retry_provider.dlq.announce import LetterFiled

    result = file_letter(
        letter,
        store,
        settings.replay_max_attempts(),
        swept=lambda: sweeper_fate(context, letter.dag_id),
        crowded_seconds=crowded_budget(),
    )
    if result is not None:
        _keep(_filed, context["ti"], result.letter_id)
        if result.replay is not None:
            _keep(_replays, context["ti"], result.replay)
        if result.changed:
            metrics.letter("created" if result.created else result.status, letter.category)
            announce.tell(LetterFiled(store.db, letter, result, context))
        if result.reopened:
            metrics.letter("reopened", letter.category)
            log.warning(
                "airflow-retry-provider: dismissed dead letter %s failed again (try %s): reopened as open work",
                result.letter_id,
                letter.try_number,
            )
        log.info(
            "airflow-retry-provider: dead letter %s is %s (%s/%s)",
            result.letter_id,
            result.status,
            letter.failure_class,
            letter.category,
        )


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def may_be_replay_outcome(context: Mapping[str, Any]) -> bool:
    """Whether this successful try can be the outcome of a replay, from the context alone (no I/O).

    A replay clears a task instance that failed, so it reruns it at try 2 or later, and Airflow's
    clear sets ``max_tries = try_number + task.retries`` (``clear_task_instances`` in
    ``airflow/models/taskinstance.py``), while a task instance never cleared keeps the
    ``max_tries = task.retries`` it was created with. So a success at try 1, or with ``max_tries <=
    task.retries`` (the first try of Airflow's current generation, ``max_tries - retries + 1``, is
    try 1), is no replay's: False. True when it may be, or when the context lacks what this reads.
    A replay whose fix raised the task's ``retries`` by at least the failed try number looks like
    a first generation here: the dead-letter sweeper resolves its letter from Airflow's state.
    """
    ti = context.get("ti")
    try_number = _int_or_none(getattr(ti, "try_number", None))
    if try_number is not None and try_number <= 1:
        return False
    max_tries = _int_or_none(getattr(ti, "max_tries", None))
    retries = _int_or_none(getattr(context.get("task"), "retries", None))
    if max_tries is None or retries is None:
        return True
    return max_tries > retries


def resolve_dead_letter(context: Mapping[str, Any]) -> None:
    """``on_success_callback``: a replayed task instance succeeded, so its letter is resolved.

    A success that cannot be a replay's outcome (:func:`may_be_replay_outcome`) returns at once,
    without a connection lookup or a query: the happy path costs nothing.
    """
    if not may_be_replay_outcome(context):
        return
    parts = key_parts(context)
    try:
        from airflow_retry_provider.dlq.store import DeadLetterStore

        resolved = DeadLetterStore.from_conn_id().resolve_replaying(
            parts["dag_id"], parts["run_id"], parts["task_id"], parts["map_index"]
        )
    except Exception as exc:  # the sweeper resolves it later from Airflow's state
        log.warning("airflow-retry-provider: could not resolve the letter now: %s", mask(redact(str(exc))))
        return
    if resolved is not None:
        _keep(_replays, context["ti"], resolved)
        metrics.letter("resolved")
        log.info("airflow-retry-provider: dead letter %s resolved by a successful replay", resolved.letter_id)
