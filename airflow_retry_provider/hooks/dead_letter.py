"""The connection to the database that holds the dead-letter queue and the provider's tables."""

from __future__ import annotations

from airflow.providers.postgres.hooks.postgres import PostgresHook


class DeadLetterHook(PostgresHook):
    """PostgreSQL hook for the provider's tables.

    :param postgres_conn_id: the Airflow connection (default ``retry_provider_default``, so
        ``AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT=postgresql://...`` works).
    """

    conn_name_attr = "postgres_conn_id"
    default_conn_name = "retry_provider_default"
    conn_type = "retry_provider_postgres"
    hook_name = "Retry Provider (PostgreSQL)"

    def init_schema(self) -> None:
        """Create the provider's tables if they do not exist."""
        from airflow_retry_provider.dlq.schema import apply_schema

        with self.get_conn() as conn:
            apply_schema(conn)
