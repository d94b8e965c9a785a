"""The work-unit ledger in PostgreSQL: claim, complete, fail; each call one short transaction.

A claim has exactly one winner (``INSERT ... ON CONFLICT DO UPDATE ... WHERE ... RETURNING``: the
row lock serialises concurrent claims, and a loser gets no row back). A ``running`` claim whose
worker died is taken over once its lease expires; a unit that succeeded is not run again until
its dedup window passes. All times come from the database clock.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from airflow_retry_provider import settings
from airflow_retry_provider.database import ProviderDatabase, Store, from_row
from airflow_retry_provider.ledger.sql import query
from airflow_retry_provider.policy import redact
from airflow_retry_provider.policy.text import storable, storable_value
from airflow_retry_provider.sql import transaction
from airflow_retry_provider.states import WorkUnitStatus

ClaimOutcome = Literal["claimed", "taken_over", "done", "busy"]

DEFAULT_DEDUP_WINDOW = timedelta(seconds=3600)
DEFAULT_LEASE = timedelta(hours=1)
MAX_ERROR_CHARS = 2000


class LedgerError(RuntimeError):
    """The ledger refused an operation (a lost lease, a missing table)."""


class WorkUnitBusy(LedgerError):
    """Another worker holds a live claim on the unit; try again after its lease expires."""


class LeaseLost(LedgerError):
    """Our claim was taken over (our lease expired) before we recorded the outcome."""


@dataclass(frozen=True)
class WorkUnit:
    """One row of ``retry_work_units``.

    :param key: the work-unit key (``identity.work_unit_key``).
    :param status: ``running``, ``succeeded`` or ``failed``.
    :param owner: the claim holder's token.
    :param owner_ti: ``dag_id/run_id/task_id/map_index`` of the holder, when known.
    :param owner_try: the holder's try number, when known.
    :param claims: how many times the unit was claimed.
    :param claimed_from: the status the current claim replaced (``running``: a takeover), None
        when the claim created the unit.
    :param remote_job_id: the id the work was submitted under, if any.
    :param result_ref: what the successful run returned (JSON), else None.
    :param error: the last failure's text, else None.
    :param claimed_at: when the current claim was taken.
    :param lease_expires_at: a ``running`` claim may be taken over after this.
    :param finished_at: when the unit last succeeded or failed.
    :param dedup_expires_at: a ``succeeded`` unit is not run again before this.
    """

    key: str
    status: str
    owner: str
    owner_ti: str | None
    owner_try: int | None
    claims: int
    claimed_from: str | None
    remote_job_id: str | None
    result_ref: Any
    error: str | None
    claimed_at: datetime
    lease_expires_at: datetime | None
    finished_at: datetime | None
    dedup_expires_at: datetime | None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> WorkUnit:
        return from_row(cls, row, key="work_unit_key")


@dataclass(frozen=True)
class Claim:
    """The answer to a claim.

    :param outcome: ``claimed`` (a new unit, or one that failed or left its window: run it),
        ``taken_over`` (a dead or earlier holder's claim: run it), ``done`` (it succeeded inside
        the dedup window: do not run, use ``unit.result_ref``) or ``busy`` (someone else holds a
        live claim: do not run).
    :param unit: the row after the claim.
    :param owner: our token; pass the claim to :meth:`Ledger.complete` / :meth:`Ledger.fail`.
    """

    outcome: ClaimOutcome
    unit: WorkUnit
    owner: str

    @property
    def won(self) -> bool:
        """Whether we hold the unit and must run it."""
        return self.outcome in ("claimed", "taken_over")


def new_owner() -> str:
    """A token naming this process and claim: ``host:pid:random``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def apply_ledger_schema(conn: Any, *, commit: bool = True) -> None:
    """Bring the provider's schema, which holds ``retry_work_units``, to the newest version.

    :param conn: an open connection, not in autocommit mode.
    :param commit: commit at the end; ``False`` runs inside the caller's transaction.
    """
    from airflow_retry_provider import migrations

    migrations.upgrade(conn, commit=commit)


def _dict_cursor(conn: Any) -> Any:
    """A cursor returning dict rows on psycopg 3 (cheaper than reading ``description`` per row)."""
    try:
        from psycopg import Connection
        from psycopg.rows import dict_row
    except ImportError:  # psycopg 2 only
        return conn.cursor()
    return conn.cursor(row_factory=dict_row) if isinstance(conn, Connection) else conn.cursor()


def _seconds(value: timedelta) -> float:
    return value.total_seconds()


class Ledger(Store):
    """Claims and outcomes of work units; each public method is one short transaction.

    :param db: the provider's database (the ledger runs the connections it opens in autocommit
        mode); or pass ``conn=`` to reuse one open connection (tight loops; open it with
        ``autocommit=True`` to save the COMMIT round trip, as the ledger does with the connections
        it opens).
    :param dedup_window: how long a success is remembered (default ``[retry_provider] ledger_dedup_seconds``
        or 3600 s).
    :param lease: how long a ``running`` claim is protected before another worker may take it over.
    """

    def __init__(
        self,
        db: ProviderDatabase | None = None,
        *,
        conn: Any = None,
        dedup_window: timedelta | None = None,
        lease: timedelta = DEFAULT_LEASE,
    ) -> None:
        if (db is None) == (conn is None):
            raise ValueError("pass exactly one of db or conn=")
        self.db = db  # type: ignore[assignment]  # None with conn=, which every call then runs on
        self._conn = conn
        self.dedup_window = dedup_window if dedup_window is not None else settings.ledger_dedup_seconds()
        if self.dedup_window < timedelta(0):
            raise ValueError(f"dedup_window must be >= 0, got {self.dedup_window}")
        if lease <= timedelta(0):
            raise ValueError(f"lease must be positive, got {lease}")
        self.lease = lease

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        """A cursor whose statement is one transaction.

        Every ledger statement is atomic on its own, so a connection the ledger opens runs in
        autocommit mode: one round trip per call, no separate COMMIT. A connection passed as
        ``conn=`` is used as it is (committed here unless it is in autocommit mode).
        """
        owned = self._conn is None
        conn = self.db.connect() if owned else self._conn
        if owned:
            conn.autocommit = True
        with transaction(conn, close=owned):
            cursor = _dict_cursor(conn)
            try:
                yield cursor
            finally:
                cursor.close()

    # -- claiming ---------------------------------------------------------------------------

    def claim(
        self,
        key: str,
        *,
        owner: str | None = None,
        owner_ti: str | None = None,
        owner_try: int | None = None,
        remote_job_id: str | None = None,
        lease: timedelta | None = None,
    ) -> Claim:
        """Claim ``key``; see :class:`Claim` for the four outcomes. One statement (a second, read-only
        one only when the claim is refused)."""
        owner = owner or new_owner()
        params = {
            "key": key,
            "owner": owner,
            "owner_ti": owner_ti,
            "owner_try": owner_try,
            "remote_job_id": remote_job_id,
            "lease_seconds": _seconds(lease or self.lease),
        }
        with self._transaction() as cur:
            cur.execute(query("claim"), params)
            row = ProviderDatabase.one(cur)
            if row is not None:
                taken = row["claimed_from"] == WorkUnitStatus.RUNNING
                return Claim("taken_over" if taken else "claimed", WorkUnit.from_row(row), owner)
            cur.execute(query("get_unit"), {"key": key})
            current = ProviderDatabase.one(cur)
        if current is None:  # deleted between the two statements: claim again
            return self.claim(
                key,
                owner=owner,
                owner_ti=owner_ti,
                owner_try=owner_try,
                remote_job_id=remote_job_id,
                lease=lease,
            )
        unit = WorkUnit.from_row(current)
        return Claim("done" if unit.status == WorkUnitStatus.SUCCEEDED else "busy", unit, owner)

    def complete(self, claim: Claim, result_ref: Any = None, *, remote_job_id: str | None = None) -> WorkUnit:
        """Record success (``result_ref`` must be JSON-serialisable); LeaseLost if our claim was taken."""
        params = {
            "key": claim.unit.key,
            "owner": claim.owner,
            "result_ref": json.dumps(storable_value(result_ref), default=str),
            "remote_job_id": remote_job_id,
            "dedup_seconds": _seconds(self.dedup_window),
        }
        return self._finish("complete", params, claim)

    def fail(self, claim: Claim, error: str, *, remote_job_id: str | None = None) -> WorkUnit:
        """Record failure (its error redacted and cut) so that the next try may claim the unit at once."""
        error = storable(redact(error, MAX_ERROR_CHARS))
        params = {"key": claim.unit.key, "owner": claim.owner, "error": error, "remote_job_id": remote_job_id}
        return self._finish("fail", params, claim)

    def _finish(self, name: str, params: dict[str, Any], claim: Claim) -> WorkUnit:
        with self._transaction() as cur:
            cur.execute(query(name), params)
            row = ProviderDatabase.one(cur)
        if row is None:
            raise LeaseLost(
                f"work unit {claim.unit.key!r}: our claim ({claim.owner}) was taken over before it "
                "finished; its lease was too short for the work"
            )
        return WorkUnit.from_row(row)

    def set_remote_job_id(self, claim: Claim, remote_job_id: str) -> None:
        """Record the remote job id of a unit we hold (before submitting)."""
        with self._transaction() as cur:
            cur.execute(
                query("set_remote_job_id"),
                {"key": claim.unit.key, "owner": claim.owner, "remote_job_id": remote_job_id},
            )
            if cur.fetchone() is None:
                raise LeaseLost(f"work unit {claim.unit.key!r}: not held by {claim.owner}")

    def renew(self, claim: Claim, lease: timedelta | None = None) -> datetime:
        """Extend our lease (long work calls this now and then); LeaseLost if we no longer hold it."""
        with self._transaction() as cur:
            cur.execute(
                query("renew_lease"),
                {"key": claim.unit.key, "owner": claim.owner, "lease_seconds": _seconds(lease or self.lease)},
            )
            row = cur.fetchone()
        if row is None:
            raise LeaseLost(f"work unit {claim.unit.key!r}: not held by {claim.owner}")
        return row[0] if not isinstance(row, Mapping) else row["lease_expires_at"]

    # -- reading ----------------------------------------------------------------------------

    def get(self, key: str) -> WorkUnit | None:
        """The unit's row, or None."""
        with self._transaction() as cur:
            cur.execute(query("get_unit"), {"key": key})
            row = ProviderDatabase.one(cur)
        return WorkUnit.from_row(row) if row is not None else None

    def forget(self, key: str) -> bool:
        """Delete the unit's row (an operator forcing a re-run inside the window); whether it existed."""
        with self._transaction() as cur:
            cur.execute(query("forget"), {"key": key})
            return cur.fetchone() is not None
