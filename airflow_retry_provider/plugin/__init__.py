"""The Airflow plugin, loaded through the ``airflow.plugins`` entry point."""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin


class RetryProviderPlugin(AirflowPlugin):
    """Airflow Retry Provider: the dead-letter pages are mounted here."""

    name = "retry_provider"
