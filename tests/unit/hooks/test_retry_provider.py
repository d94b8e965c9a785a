"""The provider's hook, its deprecated alias, and the plain hook the medallion operators read sources with."""

from __future__ import annotations

import pytest
from airflow.providers.postgres.hooks.postgres import PostgresHook

from airflow_retry_provider import get_provider_info
from airflow_retry_provider.hooks.retry_provider import RetryProviderHook
from airflow_retry_provider.operators import PostgresBronzeLoadOperator, PostgresExtractionOperator


def test_dead_letter_hook_is_a_deprecated_alias() -> None:
    """DeadLetterHook still builds a RetryProviderHook on the same connection, and warns that it is deprecated."""
    from airflow_retry_provider.hooks.dead_letter import DeadLetterHook

    with pytest.warns(
        DeprecationWarning, match=r"use airflow_retry_provider\.hooks\.retry_provider\.RetryProviderHook"
    ):
        hook = DeadLetterHook(postgres_conn_id="elsewhere")
    assert isinstance(hook, RetryProviderHook)
    assert hook.postgres_conn_id == "elsewhere"
    assert DeadLetterHook.default_conn_name == "retry_provider_default"


def test_provider_registers_the_new_hook_name() -> None:
    """The provider's connection type is served by RetryProviderHook."""
    (connection_type,) = get_provider_info()["connection-types"]
    assert connection_type == {
        "connection-type": "retry_provider_postgres",
        "hook-class-name": "airflow_retry_provider.hooks.retry_provider.RetryProviderHook",
    }


@pytest.mark.parametrize(
    ("operator", "source_conn_id", "expected"),
    [
        (PostgresBronzeLoadOperator, "crm_replica", "crm_replica"),  # a separate source database
        (PostgresBronzeLoadOperator, None, "warehouse"),  # the source is the target's database
        (PostgresExtractionOperator, "crm_replica", "crm_replica"),  # extraction reads the same way
    ],
)
def test_sources_are_read_through_a_plain_postgres_hook(operator, source_conn_id, expected) -> None:
    """Source data goes through Airflow's PostgresHook on the given connection, never the provider's hook."""
    arguments = (
        {"table": "bronze.t", "source_sql": "SELECT 1", "interval_column": "at"}
        if operator is PostgresBronzeLoadOperator
        else {"connector_id": "crm", "operations": {"list": "SELECT 1"}}
    )
    task = operator(task_id="t", conn_id="warehouse", source_conn_id=source_conn_id, **arguments)
    assert type(task.source_hook) is PostgresHook
    assert task.source_hook.postgres_conn_id == expected
    assert type(task.hook) is RetryProviderHook
