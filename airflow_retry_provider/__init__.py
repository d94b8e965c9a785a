"""Classified retries, a dead-letter queue and medallion reconciliation for Apache Airflow 3.3.

Importing this package is cheap: DAG files are parsed over and over, so the heavier
names below are imported on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> module that defines it: what a DAG author imports, found in one place
_LAZY = {
    # a task's retries
    "ClassifiedRetryPolicy": "airflow_retry_provider.retry_policy",
    "apply_profile": "airflow_retry_provider.retry_policy",
    "DeliveryDeadline": "airflow_retry_provider.retry_policy",
    "ProfileConflictError": "airflow_retry_provider.retry_policy",
    "testing_delays": "airflow_retry_provider.testing",
    # profiles and backoff (the pure core)
    "Profile": "airflow_retry_provider.policy.profiles",
    "register_profile": "airflow_retry_provider.policy.profiles",
    "get_profile": "airflow_retry_provider.policy.profiles",
    "Backoff": "airflow_retry_provider.policy.backoff",
    # classification rules (``rules=``)
    "AllOf": "airflow_retry_provider.policy.rules",
    "ErrorCode": "airflow_retry_provider.policy.rules",
    "ExceptionType": "airflow_retry_provider.policy.rules",
    "HttpStatus": "airflow_retry_provider.policy.rules",
    "MessagePattern": "airflow_retry_provider.policy.rules",
    "SqlState": "airflow_retry_provider.policy.rules",
    # capacity, kill switches, work run once
    "apply_capacity": "airflow_retry_provider.capacity",
    "kill_switch": "airflow_retry_provider.kill_switch",
    "idempotent": "airflow_retry_provider.ledger.decorator",
    "IdempotentMixin": "airflow_retry_provider.ledger.decorator",
    # stable identity
    "work_unit_key": "airflow_retry_provider.identity",
    "remote_job_id": "airflow_retry_provider.identity",
}

__all__ = ["__version__", "get_provider_info", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'airflow_retry_provider' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def get_provider_info() -> dict[str, Any]:
    """Describe the provider to Airflow's ProvidersManager (the ``apache_airflow_provider`` entry point)."""
    from airflow_retry_provider import settings

    return {
        "package-name": "airflow-retry-provider",
        "name": "Airflow Retry Provider",
        "description": "Classified retries, a PostgreSQL dead-letter queue and medallion reconciliation.",
        "versions": [__version__],
        "config": settings.provider_config(),
        "connection-types": [
            {
                "hook-class-name": "airflow_retry_provider.hooks.retry_provider.RetryProviderHook",
                "connection-type": "retry_provider_postgres",
            }
        ],
    }
