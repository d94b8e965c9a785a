"""The maintenance DAGs of airflow-retry-provider (docs/INSTALL.md): one line, nothing else."""

from airflow_retry_provider.dags.maintenance import *  # noqa: F403
