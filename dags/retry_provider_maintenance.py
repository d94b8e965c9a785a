"""The provider's maintenance DAGs, from the installed package: the one line docs/INSTALL.md gives a deployment."""

from airflow_retry_provider.dags.maintenance import *  # noqa: F403
