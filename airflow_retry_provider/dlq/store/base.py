"""What every store of the queue shares: one named statement of its ``dlq/sql/`` file in one transaction."""

from __future__ import annotations

from typing import Any

from airflow_retry_provider import sql
from airflow_retry_provider.database import ProviderDatabase, Store
from airflow_retry_provider.dlq.models import Actor
from airflow_retry_provider.dlq.sql import query
from airflow_retry_provider.policy import redact
from airflow_retry_provider.policy.text import storable


def record(
    cursor: Any,
    letter_id: int,
    event: str,
    actor: Actor,
    reason: str | None = None,
    *,
    job_id: int | None = None,
    replay_id: int | None = None,
    try_number: int | None = None,
) -> None:
    """Append one event to a letter's history, in the caller's transaction (every store's steps write them)."""
    cursor.execute(
        query("insert_event"),
        {
            "letter_id": letter_id,
            "event": event,
            **actor.as_params(),
            "reason": storable(redact(reason)[:1000]) if reason else None,
            "job_id": job_id,
            "replay_id": replay_id,
            "try_number": try_number,
        },
    )


class QueueStore(Store):
    """A store of the queue's tables; a method that needs more than one statement opens its own transaction.

    :param db: the provider's database.
    """

    statements = "queries.sql"
    """The file of ``dlq/sql/`` whose named statements this store runs."""

    def _query(self, name: str) -> str:
        return sql.named("airflow_retry_provider.dlq.sql", self.statements)[name]

    def _rows(self, name: str, parameters: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """The rows of the named statement, as dicts by column name."""
        with self.db.transaction() as cur:
            cur.execute(self._query(name), parameters)
            return ProviderDatabase.rows(cur)

    def _row(self, name: str, parameters: dict[str, Any] | None = None) -> Any:
        """The first row of the named statement as a tuple, or None."""
        with self.db.transaction() as cur:
            cur.execute(self._query(name), parameters)
            return cur.fetchone()

    def _run(self, name: str, parameters: dict[str, Any] | None = None) -> int:
        """Run the named statement; how many rows it changed."""
        with self.db.transaction() as cur:
            cur.execute(self._query(name), parameters)
            return int(cur.rowcount or 0)
