"""The provider's database: where its connections come from, one transaction on one of them, rows as dicts.

Every store (letters, replay jobs, breakers, the ledger) and everything else that reads or writes the
provider's tables (alerts, maintenance, the plugin's pages, the commands) takes a
:class:`ProviderDatabase` and runs the named statements of its own ``.sql`` file on it. Connections
come from the Airflow connection ``retry_provider_default`` (:class:`RetryProviderHook`, with its
bounded waits), from a ``postgresql://`` DSN, or from a pool (the api-server); :meth:`reusing`
keeps one connection for a block of transactions (a sweep, a failure callback), opened at the first.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypeVar

from airflow_retry_provider.sql import transaction

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Connect = Callable[[], Any]
AnyStore = TypeVar("AnyStore", bound="Store")  # typing.Self is Python 3.11+; the package supports 3.10
Value = TypeVar("Value", bound="DataclassInstance")

DEFAULT_CONN_ID = "retry_provider_default"


class ProviderDatabase:
    """The provider's PostgreSQL: a new connection per transaction, each committed or rolled back.

    :param connect: returns a new DB-API connection (psycopg 3 or psycopg2), e.g.
        ``RetryProviderHook().get_conn`` or ``lambda: psycopg.connect(dsn)``; or a pool's ``getconn``
        whose connections go back to the pool on ``close()`` (see :meth:`pooled`).
    :param close: what :meth:`close` releases (the pool), if anything.
    :param dedicated: returns a connection of its own, never a pool's (see :meth:`connect_dedicated`);
        by default ``connect``.
    """

    def __init__(
        self, connect: Connect, close: Callable[[], None] | None = None, dedicated: Connect | None = None
    ) -> None:
        self._connect = connect
        self._close = close
        self._dedicated = dedicated or connect

    @classmethod
    def from_dsn(cls, dsn: str) -> ProviderDatabase:
        """The database at ``dsn`` (a ``postgresql://`` URI), through psycopg 3."""
        import psycopg

        return cls(lambda: psycopg.connect(dsn))

    @classmethod
    def from_conn_id(cls, conn_id: str = DEFAULT_CONN_ID) -> ProviderDatabase:
        """The database of the Airflow connection ``conn_id``, through :class:`RetryProviderHook`."""
        from airflow_retry_provider.hooks.retry_provider import RetryProviderHook

        return cls(RetryProviderHook(postgres_conn_id=conn_id).get_conn)

    @classmethod
    def kept(cls) -> ProviderDatabase:
        """The provider's database (the connection :data:`DEFAULT_CONN_ID`) on this process's kept
        connection (:func:`kept`): a failure callback files its letter on the connection its try was
        recorded on. The kept connection is that one connection's: it takes no other."""
        from airflow_retry_provider.hooks.retry_provider import RetryProviderHook

        return cls(kept(RetryProviderHook(postgres_conn_id=DEFAULT_CONN_ID).get_conn))

    @classmethod
    def pooled(cls, conn_id: str = DEFAULT_CONN_ID) -> ProviderDatabase:
        """For a long-lived, threaded process (the api-server): each transaction borrows its own
        connection from a pool built on the Airflow connection ``conn_id``."""
        import psycopg

        from airflow_retry_provider.hooks.retry_provider import RetryProviderHook

        hook = RetryProviderHook(postgres_conn_id=conn_id)
        pool = hook.pool()
        return cls(pool.getconn, close=pool.close, dedicated=lambda: psycopg.connect(**hook.connect_kwargs()))

    def close(self) -> None:
        """Release what the database holds (a pool's connections); plain connections hold nothing."""
        if self._close is not None:
            self._close()

    @contextmanager
    def reusing(self) -> Iterator[ProviderDatabase]:
        """This database reusing one connection for the block's transactions (a sweep; a failure callback:
        the letter, its impact, its alerts), each committing on its own: opened at the first transaction,
        opened again when the last one left it closed or broken (a failover), closed when the block ends."""
        held: list[Any] = []

        def connect() -> _Reused:
            if held and not (held[0].closed or getattr(held[0], "broken", False)):
                return _Reused(held[0])
            if held:
                held.pop().close()
            held.append(self._connect())
            return _Reused(held[0])

        try:
            yield ProviderDatabase(connect)
        finally:
            for conn in held:
                conn.close()

    def connect(self) -> Any:
        """A new connection, for work that outlives one transaction (an export streaming its rows):
        the caller ends its transaction and closes it (see :func:`~airflow_retry_provider.sql.transaction`)."""
        return self._connect()

    def connect_dedicated(self) -> Any:
        """A new connection that is no pool's, for a session that outlives transactions (the impact
        thread's ``LISTEN`` and its session lock): the caller closes it."""
        return self._dedicated()

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """A cursor on a new connection: committed when the block ends, rolled back on an error."""
        with transaction(self._connect()) as conn:
            yield conn.cursor()

    @staticmethod
    def rows(cursor: Any) -> list[dict[str, Any]]:
        """The cursor's remaining rows as dicts by column name."""
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    @staticmethod
    def one(cursor: Any) -> dict[str, Any] | None:
        """The cursor's next row as a dict by column name (as it is from a cursor that returns dicts);
        None when there is none."""
        row = cursor.fetchone()
        if row is None:
            return None
        if isinstance(row, Mapping):
            return dict(row)
        return dict(zip([column[0] for column in cursor.description], row, strict=True))


_KEPT: dict[int, Any] = {}
"""Each process's kept connection to the provider's database (:data:`DEFAULT_CONN_ID`), by process id:
a forked child never uses (nor closes) its parent's."""


def kept(connect: Connect) -> Connect:
    """A ``connect`` that hands out this process's one kept connection, each transaction committing on
    its own: a failing task's retry policy records the try on it and its failure callback files the
    letter, its impact and its alerts on it (one connection per failing task process, where each
    opened its own). Opened with ``connect`` at the first use, again when it was closed or broke;
    :func:`close_kept` (at the callback's end) or the process's exit closes it."""

    def connection() -> _Reused:
        pid = os.getpid()
        conn = _KEPT.get(pid)
        if conn is None or conn.closed or getattr(conn, "broken", False):
            if conn is not None:
                conn.close()
            conn = _KEPT[pid] = connect()
        return _Reused(conn)

    return connection


@atexit.register
def close_kept() -> None:
    """Close this process's kept connection, if it has one."""
    conn = _KEPT.pop(os.getpid(), None)
    if conn is not None:
        conn.close()


def from_row(cls: type[Value], row: Mapping[str, Any], **columns: str) -> Value:
    """The dataclass ``cls`` from a row whose columns bear its fields' names; ``columns`` names the
    column of a field whose name differs (``dag_id="letter_dag_id"``)."""
    return cls(**{f.name: row[columns.get(f.name, f.name)] for f in fields(cls)})


class _Reused:
    """A connection shared by a block's transactions: closing it is left to ``reusing()`` or :func:`close_kept`."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def close(self) -> None:
        """Kept open for the next transaction of the block."""


class Store:
    """A store of some of the provider's tables: it runs the statements of its own ``.sql`` file on :attr:`db`.

    :param db: the provider's database.
    """

    def __init__(self, db: ProviderDatabase) -> None:
        self.db = db

    @classmethod
    def from_dsn(cls: type[AnyStore], dsn: str, **kwargs: Any) -> AnyStore:
        """The store on :meth:`ProviderDatabase.from_dsn`; ``kwargs`` go to the store's constructor."""
        return cls(ProviderDatabase.from_dsn(dsn), **kwargs)

    @classmethod
    def from_conn_id(cls: type[AnyStore], conn_id: str = DEFAULT_CONN_ID, **kwargs: Any) -> AnyStore:
        """The store on :meth:`ProviderDatabase.from_conn_id`; ``kwargs`` go to the store's constructor."""
        return cls(ProviderDatabase.from_conn_id(conn_id), **kwargs)
