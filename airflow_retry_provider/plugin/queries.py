"""The reads the dead-letter pages need beyond the letters' store: scoped to the DAGs the user may read.

Every query takes ``dag_ids``, the DAGs the signed-in user may read; letters of any other DAG are
never returned nor counted. Retry history comes from Airflow's public REST API (the task
instance ``tries`` endpoint), called as the signed-in user.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote

from airflow_retry_provider import settings
from airflow_retry_provider.airflow_compat import attempts
from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.dlq import FailedTry, Letter, LetterFilter
from airflow_retry_provider.hooks.airflow_api import AirflowApi, parse_time
from airflow_retry_provider.identity import make_work_unit_key
from airflow_retry_provider.plugin.sql import query
from airflow_retry_provider.policy import DEFAULT_INFRA_ALLOWANCE, redact
from airflow_retry_provider.policy.infra import INFRA_CLASS
from airflow_retry_provider.policy.profiles import UnknownProfileError, get_profile
from airflow_retry_provider.policy.tries import parse_reason, remaining_schedule

Keyset = tuple[datetime, int]
FINISHED_STATES = frozenset({"success", "failed", "skipped", "upstream_failed", "removed"})


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


@dataclass(frozen=True)
class Group:
    """Letters sharing one fingerprint (one root cause), with the newest of them as the sample."""

    fingerprint: str
    letters: int
    waiting: int
    oldest: datetime
    newest: datetime
    sample_id: int
    dag_id: str
    task_id: str
    category: str
    failure_class: str
    rule: str
    exception_type: str
    message: str
    versions: list[int] = field(default_factory=list)
    unknown_versions: int = 0
    deployed_version: int | None = None
    deployed_at: datetime | None = None

    @property
    def newer_deployed(self) -> bool:
        """A newer version of the sample's DAG is deployed than any its letters failed on."""
        return (
            self.deployed_version is not None
            and bool(self.versions)
            and self.deployed_version > max(self.versions)
        )

    def failed_on(self) -> str:
        """The DAG versions its letters failed on: ``v3, v4``, ``v3 + 2 unknown`` when some letters do not say."""
        named = ", ".join(f"v{number}" for number in self.versions)
        unknown = f"{self.unknown_versions} unknown" if self.unknown_versions else ""
        return " + ".join(part for part in (named, unknown) if part) or "unknown"

    def to_json(self) -> dict[str, Any]:
        return _fields_json(self)


@dataclass(frozen=True)
class GroupPage:
    """One page of groups, and the totals of every group that matches.

    :param after: the keyset (letters, fingerprint) of the next page, or None on the last page.
    """

    groups: tuple[Group, ...]
    total_groups: int
    total_letters: int
    after: tuple[int, str] | None

    def next_page(self) -> dict[str, Any] | None:
        """The query parameters of the next page; None on the last page."""
        return {"after_letters": self.after[0], "after_fingerprint": self.after[1]} if self.after else None


@dataclass(frozen=True)
class Try:
    """One try of a task instance as Airflow's REST API reports it."""

    try_number: int
    state: str | None
    start_date: datetime | None
    end_date: datetime | None
    duration: float | None

    @classmethod
    def from_json(cls, item: dict[str, Any]) -> Try:
        return cls(
            try_number=int(item.get("try_number") or 0),
            state=item.get("state"),
            start_date=parse_time(item.get("start_date")),
            end_date=parse_time(item.get("end_date")),
            duration=item.get("duration"),
        )

    def to_json(self) -> dict[str, Any]:
        return _fields_json(self)


def _fields_json(item: Any) -> dict[str, Any]:
    """A dataclass's fields, in order, as JSON values (times in ISO 8601)."""
    return {
        name: _iso(value) if isinstance(value, datetime) else value for name, value in item.__dict__.items()
    }


def next_letters(page: list[Letter], limit: int) -> dict[str, Any] | None:
    """The query parameters of the page after ``page`` of ``limit`` letters; None when it is not full (the last)."""
    if len(page) < limit:
        return None
    return {"before_created": page[-1].created_at.isoformat(), "before_id": page[-1].id}


def _params(where: LetterFilter, dag_ids: Collection[str]) -> dict[str, Any]:
    params = where.as_params()
    params["dag_ids"] = sorted(dag_ids)
    return params


class LetterViews:
    """The pages' reads (``plugin/sql/queries.sql``), on the provider's database.

    Each call is a transaction of its own, except inside :meth:`reading`, where the calls share one
    connection (a page makes three or four reads; a connection costs more than any of them).

    :param db: the provider's database.
    """

    def __init__(self, db: ProviderDatabase, cursor: Any = None) -> None:
        self.db = db
        self._cursor = cursor

    @contextmanager
    def reading(self) -> Iterator[LetterViews]:
        """These views on one connection and one transaction."""
        with self.db.transaction() as cur:
            yield LetterViews(self.db, cur)

    def _fetch(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        if self._cursor is not None:
            self._cursor.execute(query(name), params)
            return ProviderDatabase.rows(self._cursor)
        with self.db.transaction() as cur:
            cur.execute(query(name), params)
            return ProviderDatabase.rows(cur)

    def dag_ids(self) -> list[str]:
        """Every DAG that has letters (before any permission check)."""
        return [str(row["dag_id"]) for row in self._fetch("ui_letter_dag_ids", {})]

    def letters(
        self, where: LetterFilter, dag_ids: Collection[str], limit: int, before: Keyset | None = None
    ) -> list[Letter]:
        """Letters matching ``where`` in ``dag_ids``, newest first, after the keyset ``before``."""
        params = _params(where, dag_ids)
        params.update(
            limit=limit,
            before_created=before[0] if before else None,
            before_id=before[1] if before else None,
        )
        return [Letter.from_row(row) for row in self._fetch("ui_list_letters", params)]

    def count(self, where: LetterFilter, dag_ids: Collection[str], cap: int) -> int:
        """How many letters match, counted up to ``cap``."""
        rows = self._fetch("ui_count_letters", {**_params(where, dag_ids), "cap": cap})
        return int(rows[0]["count"])

    def groups(
        self, where: LetterFilter, dag_ids: Collection[str], limit: int, after: tuple[int, str] | None = None
    ) -> GroupPage:
        """Groups by fingerprint, biggest first; ``after`` is the last group of the previous page."""
        params = _params(where, dag_ids)
        params.update(
            limit=limit,
            after_letters=after[0] if after else None,
            after_fingerprint=after[1] if after else None,
        )
        rows = self._fetch("ui_fingerprint_groups", params)
        groups = tuple(Group(**{name: row[name] for name in Group.__dataclass_fields__}) for row in rows)
        total_groups = int(rows[0]["total_groups"]) if rows else 0
        total_letters = int(rows[0]["total_letters"]) if rows else 0
        following = (groups[-1].letters, groups[-1].fingerprint) if len(groups) == limit else None
        return GroupPage(groups, total_groups, total_letters, following)

    def letter_of_ti(self, dag_id: str, run_id: str, task_id: str, map_index: int) -> Letter | None:
        """The letter filed for one task instance, if any."""
        ti = {"dag_id": dag_id, "run_id": run_id, "task_id": task_id, "map_index": map_index}
        rows = self._fetch("ui_letter_of_ti", ti)
        return Letter.from_row(rows[0]) if rows else None


class ExportsBusy(Exception):
    """The user already runs as many exports as allowed (``[retry_provider] export_concurrency_per_user``)."""


class LetterExport:
    """One export: a snapshot of the matching letters, streamed through a server-side cursor, at most ``limit``.

    :meth:`open` takes one of the user's export slots (a transaction-level PostgreSQL advisory lock,
    so the limit holds across api-server workers and a dead worker's slot is freed with its
    connection), counts the letters up to ``limit + 1`` (``cut``: more match than are exported)
    and leaves the transaction open; :meth:`letters` streams them, ``batch`` rows per fetch, and
    ends it. Letters are shown as stored: they were redacted when they were filed.

    :param user: whose slots (the signed-in user's name).
    :param concurrency: slots per user.
    """

    def __init__(
        self,
        db: ProviderDatabase,
        where: LetterFilter,
        dag_ids: Collection[str],
        user: str,
        limit: int,
        concurrency: int,
        batch: int = 1000,
    ) -> None:
        self.db, self.params, self.user = db, _params(where, dag_ids), user
        self.limit, self.concurrency, self.batch = limit, concurrency, batch
        self.cut = False
        self._conn: Any = None

    def open(self) -> LetterExport:
        """Take a slot and count; ``ExportsBusy`` (nothing held) when every slot of the user is taken."""
        conn = self.db.connect()
        try:
            cur = conn.cursor()
            cur.execute(query("export_snapshot"))
            for slot in range(self.concurrency):
                cur.execute(query("export_slot"), {"name": f"retry_provider export {self.user} {slot}"})
                if cur.fetchone()[0]:
                    break
            else:
                raise ExportsBusy(f"at most {self.concurrency} exports at once per user")
            cur.execute(query("ui_count_letters"), {**self.params, "cap": self.limit + 1})
            self.cut = int(cur.fetchone()[0]) > self.limit
            cur.close()
        except BaseException:
            conn.rollback()
            conn.close()
            raise
        self._conn = conn
        return self

    def letters(self) -> Iterator[Letter]:
        """The letters, newest first; the transaction ends (the slot is freed) when they are read or dropped."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            cur = conn.cursor(name="retry_provider_export")
            cur.itersize = self.batch
            cur.execute(query("ui_export_letters"), {**self.params, "limit": self.limit})
            names: list[str] | None = None
            while rows := cur.fetchmany(self.batch):
                names = names or [column[0] for column in cur.description]
                for row in rows:
                    yield Letter.from_row(dict(zip(names, row, strict=True)))
            cur.close()
        finally:
            conn.rollback()  # read only: nothing to commit; frees the slot
            conn.close()

    def close(self) -> None:
        """Free the slot of an export whose letters were never read."""
        if self._conn is not None:
            conn, self._conn = self._conn, None
            conn.rollback()
            conn.close()


def task_instance_tries(api: AirflowApi, dag_id: str, run_id: str, task_id: str, map_index: int) -> list[Try]:
    """Every try of one task instance (``GET .../taskInstances/{task_id}[/{map_index}]/tries``)."""
    path = (
        f"/api/v2/dags/{quote(dag_id, safe='')}/dagRuns/{quote(run_id, safe='')}"
        f"/taskInstances/{quote(task_id, safe='')}"
    )
    if map_index != -1:
        path += f"/{map_index}"
    answer = api.request("GET", path + "/tries")
    tries = [Try.from_json(item) for item in (answer or {}).get("task_instances", [])]
    return sorted(tries, key=lambda t: t.try_number)


# -- the Retries tab: every try from Airflow's metadata database -------------------------------


def _try_json(row: Any) -> dict[str, Any]:
    """One try: when, how it ended, the delay the policy chose and why (read back from its reason)."""
    reason = redact(row.retry_reason) if row.retry_reason else None
    return {
        "try_number": row.try_number,
        "state": row.state,
        "start_date": _iso(row.start_date),
        "end_date": _iso(row.end_date),
        "duration": row.duration,
        "delay_seconds": row.retry_delay_override,
        "reason": reason,
        "decision": parse_reason(reason).to_json(),
        "source": "airflow" if reason else None,
    }


def explain_with_letter(tries: list[dict[str, Any]], letter: Letter | None) -> list[dict[str, Any]]:
    """The tries, the one that dead-lettered explained by its letter where Airflow kept no reason.

    Airflow 3.3 stores no ``retry_reason`` when a policy decides FAIL, so the try on-call cares
    about most would show no class, rule or reason, while its letter holds all of them. That try
    (the letter's ``try_number``) then takes the letter's reason, read back like Airflow's, with
    the letter's columns where the text says nothing, and ``"source": "letter"``. A reason Airflow
    kept (3.4 keeps it on FAIL too) always wins: ``"source": "airflow"``.
    """
    if letter is None:
        return tries
    explained = []
    for tried in tries:
        if tried["reason"] is None and tried["try_number"] == letter.try_number:
            reason = redact(letter.reason) if letter.reason else None
            decision = parse_reason(reason).to_json()
            known = {
                "failure_class": letter.failure_class,
                "category": letter.category,
                "rule": letter.rule,
                "dead_letter": letter.category,
                "attempt": letter.attempts_used,
                "max_attempts": letter.max_attempts,
            }
            decision.update({name: value for name, value in known.items() if decision[name] is None})
            tried = {
                **tried,
                "reason": reason,
                "decision": decision,
                "source": "letter",
                "letter_id": letter.id,
            }
        explained.append(tried)
    return explained


def infra_allowance(tries: list[dict[str, Any]]) -> int:
    """The infra allowance of the profile the tries' reasons name (the latest known), else the default;
    0 while the kill switch ``[retry_provider] infra_allowance_enabled`` is off, as the workers count it."""
    if not settings.infra_allowance_enabled():
        return 0
    for tried in reversed(tries):
        name = tried["decision"]["profile"]
        if name:
            try:
                return get_profile(str(name)).infra_allowance
            except UnknownProfileError:
                continue
    return DEFAULT_INFRA_ALLOWANCE


def with_recorded_classes(
    tries: list[dict[str, Any]], recorded: list[FailedTry], allowance: int
) -> list[dict[str, Any]]:
    """The tries, each with the class the provider recorded for it (``retry_failed_tries``) and
    whether it spent one of the author's attempts (``spent_attempt``: True, False or None unknown).

    A try that ended with no exception from its code (class ``infra``: killed, evicted, lost) has no
    reason in Airflow; it shows the class the infra watcher recorded (``"source": "provider"``). The
    first ``allowance`` infra tries spent none of the author's attempts, later ones did; a try the
    task's code failed or that succeeded spent one. A failed try nobody recorded nor explained (not
    read yet) or a running one is None.
    """
    by_number = {failed.try_number: failed for failed in recorded}
    infra_seen = 0
    shown = []
    for tried in tries:
        failed = by_number.get(tried["try_number"])
        decision = dict(tried["decision"])
        source = tried["source"]
        if failed is not None and decision["failure_class"] is None:
            decision.update(failure_class=failed.failure_class, category=failed.category)
            source = source or "provider"
        failure_class = decision["failure_class"]
        if failure_class == INFRA_CLASS:
            infra_seen += 1
            spent: bool | None = infra_seen > allowance
        else:
            spent = True if failure_class or tried["state"] == "success" else None
        shown.append(
            {
                **tried,
                "decision": decision,
                "source": source,
                "hostname": failed.hostname if failed else None,
                "spent_attempt": spent,
            }
        )
    return shown


def _schedule(ti: Any, dag_run: Any, tries: list[dict[str, Any]], next_try_at: datetime | None) -> Any:
    """The attempts still ahead under the profile named by the latest retry reason (None if none applies)."""
    if ti.state in FINISHED_STATES or not tries:
        return None
    latest = next((t for t in reversed(tries) if t["decision"]["profile"]), None)
    if latest is None:
        return None
    decision = parse_reason(latest["reason"])
    if decision.attempt is None or decision.max_attempts is None or decision.dead_letter:
        return None
    try:
        profile = get_profile(str(decision.profile))
    except UnknownProfileError:
        return {"profile": decision.profile, "error": f"profile {decision.profile!r} is not known here"}
    start = next_try_at if ti.state == "up_for_retry" else ti.start_date if ti.state == "running" else None
    seed = make_work_unit_key(
        ti.dag_id,
        ti.task_id,
        ti.map_index,
        dag_run.data_interval_start,
        dag_run.data_interval_end,
        ti.run_id,
    )
    planned, stop = remaining_schedule(
        profile.backoff, seed, decision.attempt, decision.max_attempts, start, decision.deadline
    )
    return {
        "profile": profile.name,
        "deadline": _iso(decision.deadline),
        "until": stop,
        "attempts": [row.to_json() for row in planned],
    }


def retry_history(dag_id: str, run_id: str, task_id: str, map_index: int) -> dict[str, Any] | None:
    """Every try of one task instance, the next try's start and the schedule ahead; None if there is no such instance.

    Reads Airflow's metadata database (the plugin runs in the api-server) through
    :func:`airflow_retry_provider.airflow_compat.attempts`, which knows where each Airflow version
    keeps its tries: Airflow's REST API carries no ``retry_delay_override`` (nor, on 3.3, the reason).
    """
    from airflow.models.dagrun import DagRun
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    ti_key = {"dag_id": dag_id, "run_id": run_id, "task_id": task_id, "map_index": map_index}
    with create_session() as session:
        ti = session.scalars(select(TaskInstance).filter_by(**ti_key)).one_or_none()
        if ti is None:
            return None
        dag_run = session.scalars(select(DagRun).filter_by(dag_id=dag_id, run_id=run_id)).one()
        tries = [_try_json(attempt) for attempt in attempts(session, ti)]
        next_try_at = None
        if ti.state == "up_for_retry" and ti.retry_delay_override is not None:
            next_try_at = ti.next_retry_datetime()
        return {
            **ti_key,
            "state": ti.state,
            "try_number": ti.try_number,
            "max_tries": ti.max_tries,
            "tries": tries,
            "next_try_at": _iso(next_try_at),
            "schedule": _schedule(ti, dag_run, tries, next_try_at),
        }
