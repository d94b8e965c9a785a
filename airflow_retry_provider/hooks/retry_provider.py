"""The connection to the database that holds the provider's tables: letters, ledger, trails, reports.

Every connection gets bounded waits: ``connect_timeout`` (default 5 s) and ``statement_timeout``
(default 30 s), both overridable in the Airflow connection's extras. A connection that fails to
open is retried once with the Airflow connection read again (a rotated password needs no restart).
Long-lived processes (the api-server) share a :meth:`RetryProviderHook.pool`: each request borrows
its own connection and gives it back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.providers.postgres.hooks.postgres import PostgresHook

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

DEFAULT_CONNECT_TIMEOUT = 5
DEFAULT_STATEMENT_TIMEOUT = "30s"


def with_timeouts(conn_args: dict[str, Any]) -> dict[str, Any]:
    """``conn_args`` with ``connect_timeout`` and a ``statement_timeout`` option, unless already set.

    ``statement_timeout`` (an extra, not a libpq parameter) becomes ``-c statement_timeout=...`` in
    ``options``.
    """
    args = dict(conn_args)
    args.setdefault("connect_timeout", DEFAULT_CONNECT_TIMEOUT)
    timeout = args.pop("statement_timeout", DEFAULT_STATEMENT_TIMEOUT)
    options = str(args.get("options") or "")
    if "statement_timeout" not in options:
        args["options"] = f"{options} -c statement_timeout={timeout}".strip()
    return args


class RetryProviderHook(PostgresHook):
    """PostgreSQL hook for the provider's tables (dead letters, the ledger, the reconciliation trails).

    :param postgres_conn_id: the Airflow connection (default ``retry_provider_default``, so
        ``AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT=postgresql://...`` works).
    """

    conn_name_attr = "postgres_conn_id"
    default_conn_name = "retry_provider_default"
    conn_type = "retry_provider_postgres"
    hook_name = "Retry Provider (PostgreSQL)"

    def get_conn(self) -> Any:
        """A new connection with bounded waits; on a failure to connect, once more with the connection re-read."""
        try:
            return super().get_conn()
        except Exception as exc:
            if type(exc).__name__ != "OperationalError" or not self.reread_connection():
                raise
            return super().get_conn()

    def reread_connection(self) -> bool:
        """Read the Airflow connection again; True if it changed (e.g. a rotated password)."""
        fresh = self.get_connection(self.get_conn_id())
        if fresh.get_uri() == self.connection.get_uri():
            return False
        self._connection = fresh  # DbApiHook's cache of the Connection (its setter ignores a new value)
        return True

    def _create_connection(self, conn_args: dict[str, Any]) -> Any:
        return super()._create_connection(with_timeouts(conn_args))

    def connect_kwargs(self) -> dict[str, Any]:
        """What a new psycopg 3 connection is opened with: the Airflow connection, read now, with bounded waits."""
        conn = self.get_connection(self.get_conn_id())
        args: dict[str, Any] = {
            "host": conn.host,
            "user": conn.login,
            "password": conn.password,
            "dbname": self.database or conn.schema,
            "port": conn.port,
        }
        ignored = {*self.ignored_extra_options, "cursor"}
        args.update((k, v) for k, v in conn.extra_dejson.items() if k not in ignored)
        return with_timeouts({k: v for k, v in args.items() if v is not None})

    def pool(self, max_size: int = 8, timeout: float = 30.0) -> ConnectionPool:
        """A pool of psycopg 3 connections; each new one re-reads the Airflow connection.

        ``pool.getconn`` hands out a connection whose ``close()`` gives it back, so it fits anything
        that takes a ``connect`` callable (:meth:`~airflow_retry_provider.database.ProviderDatabase.pooled`).

        :param max_size: connections at most; a caller waits up to ``timeout`` seconds for one.
        """
        from psycopg_pool import ConnectionPool

        return ConnectionPool(
            kwargs=self.connect_kwargs,
            min_size=1,
            max_size=max_size,
            timeout=timeout,
            close_returns=True,
            open=True,
            name=f"retry_provider:{self.get_conn_id()}",
        )

    def init_schema(self) -> tuple[int, int]:
        """Bring the provider's tables to the newest schema version; return the version before and after."""
        from airflow_retry_provider import migrations

        with self.get_conn() as conn:
            return migrations.upgrade(conn)
