"""The dead-letter store: named SQL from ``sql/queries.sql`` on a DB-API connection, rows as models."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from airflow_retry_provider.dlq.models import Letter, NewLetter, Replay, status_after_failure
from airflow_retry_provider.dlq.sql import query

Connect = Callable[[], Any]


@dataclass(frozen=True)
class FileResult:
    """What filing a letter did: ``created`` a row, ``changed`` an existing one, or neither (a repeat)."""

    letter_id: int
    status: str
    replay_count: int
    created: bool
    changed: bool


@dataclass(frozen=True)
class LetterFilter:
    """Which letters: every field None means "any"."""

    dag_id: str | None = None
    task_id: str | None = None
    category: str | None = None
    failure_class: str | None = None
    status: str | None = None
    fingerprint: str | None = None
    workspace_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    ids: Sequence[int] | None = None

    def as_params(self) -> dict[str, Any]:
        params = dict(self.__dict__)
        params["ids"] = list(self.ids) if self.ids is not None else None
        return params


class DeadLetterStore:
    """Reads and writes letters; each public method is one transaction.

    :param connect: returns a new DB-API connection (psycopg 3 or psycopg2), e.g.
        ``DeadLetterHook().get_conn`` or ``lambda: psycopg.connect(dsn)``.
    """

    def __init__(self, connect: Connect) -> None:
        self._connect = connect

    @classmethod
    def from_dsn(cls, dsn: str) -> DeadLetterStore:
        import psycopg

        return cls(lambda: psycopg.connect(dsn))

    @classmethod
    def from_conn_id(cls, conn_id: str = "retry_provider_default") -> DeadLetterStore:
        from airflow_retry_provider.hooks.dead_letter import DeadLetterHook

        return cls(DeadLetterHook(postgres_conn_id=conn_id).get_conn)

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """A cursor on a new connection: committed when the block ends, rolled back on an error."""
        conn = self._connect()
        try:
            cursor = conn.cursor()
            yield cursor
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
        finally:
            conn.close()

    @staticmethod
    def rows(cursor: Any) -> list[dict[str, Any]]:
        """The cursor's remaining rows as dicts by column name."""
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    # -- writing ---------------------------------------------------------------------------

    def file(self, letter: NewLetter, replay_cap: int) -> FileResult:
        """File ``letter`` idempotently: the same task instance and try twice writes one row.

        A later try of a task instance that already has a letter updates it: after a failed
        replay it returns to ``dlq`` with ``replay_count + 1`` (``parked`` at ``replay_cap``).
        """
        params = letter.as_params()
        with self.transaction() as cur:
            cur.execute(query("insert_letter"), params)
            inserted = cur.fetchone()
            if inserted is not None:
                return FileResult(int(inserted[0]), "dlq", 0, created=True, changed=True)
            cur.execute(query("lock_letter_by_ti"), params)
            letter_id, status, replay_count, try_number = cur.fetchone()
            if try_number >= letter.try_number:
                return FileResult(letter_id, status, replay_count, created=False, changed=False)
            new_status, new_count = status_after_failure(status, replay_count, replay_cap)
            why = "replay failed" if status == "replaying" else "failed again"
            cur.execute(
                query("refile_letter"),
                {
                    **params,
                    "id": letter_id,
                    "status": new_status,
                    "replay_count": new_count,
                    "status_reason": f"{why} (try {letter.try_number})",
                },
            )
            if status == "replaying":
                cur.execute(
                    query("finish_pending_replays"),
                    {"letter_id": letter_id, "outcome": "failed", "detail": letter.reason},
                )
            return FileResult(letter_id, new_status, new_count, created=False, changed=True)

    def resolve_replaying(self, dag_id: str, run_id: str, task_id: str, map_index: int) -> int | None:
        """A replayed task instance succeeded: its letter becomes ``resolved``. Returns the letter id."""
        ti = {"dag_id": dag_id, "run_id": run_id, "task_id": task_id, "map_index": map_index}
        with self.transaction() as cur:
            cur.execute(query("resolve_replaying_letter"), {**ti, "status_reason": "replay succeeded"})
            row = cur.fetchone()
            if row is None:
                return None
            cur.execute(
                query("finish_pending_replays"),
                {"letter_id": row[0], "outcome": "succeeded", "detail": None},
            )
            return int(row[0])

    def has_letter(self, dag_id: str, run_id: str, task_id: str, map_index: int, try_number: int) -> bool:
        """True if a letter already covers this task instance at ``try_number`` or later."""
        params = {
            "dag_id": dag_id,
            "run_id": run_id,
            "task_id": task_id,
            "map_index": map_index,
            "try_number": try_number,
        }
        with self.transaction() as cur:
            cur.execute(query("letter_exists_for_ti"), params)
            return cur.fetchone() is not None

    # -- reading ---------------------------------------------------------------------------

    def get(self, letter_id: int) -> Letter | None:
        with self.transaction() as cur:
            cur.execute(query("get_letter"), {"id": letter_id})
            rows = self.rows(cur)
        return Letter.from_row(rows[0]) if rows else None

    def list(
        self,
        where: LetterFilter | None = None,
        limit: int = 50,
        before: tuple[datetime, int] | None = None,
    ) -> list[Letter]:
        """Letters matching ``where``, newest first; ``before`` is the last row of the previous page."""
        params = (where or LetterFilter()).as_params()
        params.update(
            limit=limit,
            before_created=before[0] if before else None,
            before_id=before[1] if before else None,
        )
        with self.transaction() as cur:
            cur.execute(query("list_letters"), params)
            return [Letter.from_row(row) for row in self.rows(cur)]

    def replays(self, letter_id: int) -> builtins.list[Replay]:
        with self.transaction() as cur:
            cur.execute(query("replays_of_letter"), {"letter_id": letter_id})
            return [Replay.from_row(row) for row in self.rows(cur)]
