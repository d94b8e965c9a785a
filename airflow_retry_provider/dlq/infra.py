"""Tries that ended with no exception from the task's code, recognised and filed as ``infra/<category>`` (issue 57).

No failure callback runs for a killed task process, and the dag-processor's callback for a task
that died outside the runner has no message. What is left is read from Airflow's REST API, one
try at a time (:func:`try_evidence`):

- the try's log (``GET .../logs/{try_number}``): only the supervisor's exit line, ``Process
  terminated by signal.`` with its ``signal`` (or ``Process exited abnormally`` with its
  ``exit_code``); the rest of the log is the task's own text and is never matched;
- the scheduler's audit-log rows of that try (``GET /api/v2/eventLogs``): ``heartbeat timeout``,
  ``state mismatch`` (with the executor's info, e.g. Celery's ``WorkerLostError``), ``stuck in
  queued tries exceeded``;
- the try's state and the host it ran on (``GET .../tries``), the task instance's note.

:func:`~airflow_retry_provider.policy.infra.classify_infra` names the category; evidence it does
not recognise stays as Airflow left it (``unknown/task-died``, ``unknown/filed-by-sweeper``).
The infra watcher (``dlq/infra_watch.py``) and the dead-letter sweeper both file through
:func:`file_infra`, the callback's filing path (one transaction with the letter's event and its
place in the impact queue; the same task instance and try is filed once).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from airflow_retry_provider import announce, metrics
from airflow_retry_provider.dlq.announce import LetterFiled
from airflow_retry_provider.dlq.models import Letter, NewLetter
from airflow_retry_provider.dlq.store import DeadLetterStore, FailedTry, FileResult
from airflow_retry_provider.hooks.airflow_api import AirflowApi, AirflowApiError, parse_time
from airflow_retry_provider.identity import make_work_unit_key
from airflow_retry_provider.policy.decide import letter_reason
from airflow_retry_provider.policy.infra import (
    INFRA_CLASS,
    InfraClassification,
    InfraEvidence,
    classify_infra,
)

log = logging.getLogger(__name__)

EXIT_LINES = ("Process terminated by signal", "Process exited abnormally")
"""How the supervisor's exit line starts (``WatchedSubprocess._check_subprocess_exit``): the only log
lines read; everything else in a try's log is the task's own text."""
SCHEDULER_EVENTS = ("heartbeat timeout", "state mismatch", "stuck in queued tries exceeded")
"""The scheduler's audit-log events that tell of a try the task's code did not end."""
DIED = "TaskDied"
"""The exception type of a letter the dag-processor's callback filed for a task that died outside the
runner (``dlq/callback.py``: ``unknown/task-died``, its category ``exhausted`` after the last try)."""
SWEPT = "filed-by-sweeper"


def replaceable(letter: Letter) -> bool:
    """Whether ``letter`` was filed without knowing what ended its try (so infra evidence may reclassify it)."""
    return letter.failure_class == "unknown" and (letter.exception_type == DIED or letter.category == SWEPT)


MAX_EXIT_LINES = 5
WATCHER = "watcher"


@dataclass(frozen=True)
class EndedTry:
    """One try of a managed task instance that ended failed (or up for retry), as Airflow lists it.

    :param final: the task instance ended ``failed`` at this try (no try left): a letter is filed.
    :param max_tries: the task instance's ``max_tries`` (the author's attempts are ``max_tries + 1``
        until part A's budget changes that).
    """

    dag_id: str
    run_id: str
    task_id: str
    map_index: int
    try_number: int
    state: str
    hostname: str | None
    end_date: datetime | None
    final: bool
    max_tries: int = 0
    note: str | None = None
    version: Mapping[str, Any] | None = None

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.dag_id, self.run_id, self.task_id, self.map_index)


def _entry_text(entry: Any) -> tuple[str, int | None]:
    """An exit line's text and the exit code it names (a structured entry's ``signal`` or ``exit_code``)."""
    if isinstance(entry, Mapping):
        text = str(entry.get("event", ""))
        for field in ("signal", "exit_code"):
            value = entry.get(field)
            if isinstance(value, int) and not isinstance(value, bool):
                return f"{text} {field}={value} {entry.get('signal_name') or ''}".strip(), value
            if isinstance(value, str) and value.lstrip("-").isdigit():
                return f"{text} {field}={value} {entry.get('signal_name') or ''}".strip(), int(value)
        return text, None
    return str(entry)[:1000], None


def exit_lines(entries: Sequence[Any]) -> tuple[list[str], int | None]:
    """The supervisor's exit lines of a try's log, and the exit code the last one names (None: unknown)."""
    lines: list[str] = []
    code: int | None = None
    for entry in entries:
        text, found = _entry_text(entry)
        # a structured entry is the supervisor's when its event starts so; a plain line, when its head holds it
        if isinstance(entry, Mapping):
            ours = text.startswith(EXIT_LINES)
        else:
            ours = any(start in text[:300] for start in EXIT_LINES)
        if not ours:
            continue
        lines.append(text[:1000])
        if found is None and "signal=" in text:
            tail = text.split("signal=", 1)[1].split()[0].strip(",")
            found = int(tail) if tail.lstrip("-").isdigit() else None
        code = found if found is not None else code
    return lines[-MAX_EXIT_LINES:], code


def try_evidence(api: AirflowApi, ended: EndedTry) -> InfraEvidence:
    """What Airflow reports of ``ended`` (its exit line, the scheduler's events, its host and note)."""
    parts: list[str] = []
    code: int | None = None
    try:
        lines, code = exit_lines(
            api.try_log(ended.dag_id, ended.run_id, ended.task_id, ended.map_index, ended.try_number)
        )
        parts.extend(lines)
    except AirflowApiError as exc:  # a log Airflow cannot read (removed, remote store down): the rest decides
        if exc.status_code not in (400, 404):
            raise
    for event in api.event_logs(
        ended.dag_id, ended.run_id, ended.task_id, ended.map_index, ended.try_number, SCHEDULER_EVENTS
    ):
        parts.append(f"{event.get('event')}: {str(event.get('extra') or '')[:1500]}")
    if ended.note:
        parts.append(f"note: {ended.note[:500]}")
    if ended.hostname:
        parts.append(f"hostname: {ended.hostname}")
    state = ended.state if ended.state in ("queued", "scheduled") else None
    return InfraEvidence(exit_code=code, message="\n".join(parts), state=state)


def node_fingerprint(hostname: str) -> str:
    """The root cause of every infrastructure failure on one worker or node: one group, one alert."""
    return hashlib.sha256(f"{INFRA_CLASS}\x1fnode\x1f{hostname}".encode()).hexdigest()[:16]


def node_of(letter: NewLetter) -> str | None:
    """The worker or node an ``infra`` letter names (its message starts ``on host <name>:``), else None."""
    if letter.failure_class != INFRA_CLASS or not letter.message.startswith("on host "):
        return None
    return letter.message[len("on host ") :].split(":", 1)[0] or None


def infra_letter(
    ended: EndedTry, found: InfraClassification, dag_run: Mapping[str, Any], filed_by: str = WATCHER
) -> NewLetter:
    """The letter of ``ended``'s final try: ``infra/<category>``, its reason the advice, not "exhausted"."""
    start, end = parse_time(dag_run.get("data_interval_start")), parse_time(dag_run.get("data_interval_end"))
    host = ended.hostname or found.hostname
    where = f"on host {host}: " if host else ""
    message = f"{where}{found.message}"[:2000]
    what = f"{found.failure}: {found.advice}"
    if host:
        what += f" (host {host})"
    max_attempts = ended.max_tries + 1 if ended.max_tries else None
    reason = letter_reason(what, attempt=ended.try_number, max_attempts=max_attempts, category=None)
    return NewLetter(
        dag_id=ended.dag_id,
        run_id=ended.run_id,
        task_id=ended.task_id,
        map_index=ended.map_index,
        try_number=ended.try_number,
        attempts_used=ended.try_number,
        max_attempts=max_attempts,
        work_unit_key=make_work_unit_key(
            ended.dag_id, ended.task_id, ended.map_index, start, end, ended.run_id
        ),
        data_interval_start=start,
        data_interval_end=end,
        workspace_id=None,
        failure_class=INFRA_CLASS,
        category=found.category,
        rule=found.rule,
        exception_type="NoException",
        message=message,
        reason=reason[:500],
        fingerprint=node_fingerprint(host) if host else _fingerprint(found),
        filed_by=filed_by,
        **dict(ended.version or {}),
    )


def _fingerprint(found: InfraClassification) -> str:
    return hashlib.sha256(f"{INFRA_CLASS}\x1f{found.category}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class InfraOutcome:
    """What recognising one try did: the category, the try recorded, the letter filed or reclassified."""

    category: str
    recorded: bool
    letter_id: int | None = None
    reclassified: bool = False


def file_infra(
    store: DeadLetterStore,
    ended: EndedTry,
    found: InfraClassification,
    dag_run: Mapping[str, Any],
    replay_cap: int,
    filed_by: str = WATCHER,
) -> InfraOutcome:
    """Record ``ended``'s try as ``infra``; on the final try, file its letter (or reclassify the
    ``unknown`` letter filed for that try) and announce it, as the failure callback does."""
    recorded = store.record_failed_try(
        FailedTry(*ended.key, ended.try_number, INFRA_CLASS, found.category, ended.hostname or found.hostname)
    )
    if not ended.final:
        return InfraOutcome(found.category, recorded)
    letter = infra_letter(ended, found, dag_run, filed_by)
    existing = store.letter_of(*ended.key)
    result: FileResult | None
    reclassified = False
    if existing is not None and existing.try_number == ended.try_number:
        if not replaceable(existing):
            return InfraOutcome(found.category, recorded, existing.id)
        was = "task-died" if existing.exception_type == DIED else existing.category
        why = (
            f"reclassified {existing.failure_class}/{was} as {found.failure}: "
            f"Airflow's evidence shows the try ended with no exception ({found.rule})"
        )
        result = store.reclassify(existing.id, letter, why)
        reclassified = result is not None
    else:
        result = store.file(letter, replay_cap)
    if result is None:
        return InfraOutcome(found.category, recorded, existing.id if existing else None)
    if result.changed:
        metrics.letter("reclassified" if reclassified else "created", letter.category)
        announce.tell(LetterFiled(store.db, letter, result))
        log.warning(
            "airflow-retry-provider: %s dead letter %s %s/%s/%s[%s] try %s as %s",
            filed_by,
            "reclassified" if reclassified else "filed",
            ended.dag_id,
            ended.run_id,
            ended.task_id,
            ended.map_index,
            ended.try_number,
            found.failure,
        )
    return InfraOutcome(found.category, recorded, result.letter_id, reclassified)


def recognise(api: AirflowApi, ended: EndedTry) -> InfraClassification | None:
    """The infra category of ``ended``, or None when Airflow's evidence does not tell it apart."""
    return classify_infra(try_evidence(api, ended))
