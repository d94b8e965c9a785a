"""The DAGs the provider ships: the dead-letter sweeper, reconciliation, retention, the work-unit sweeper.

A deployment gets all four with one line in a file of its DAG folder (docs/INSTALL.md), or
``airflow-retry dags install FOLDER`` writes that file::

    from airflow_retry_provider.dags.maintenance import *

Each module builds its DAG when imported; that imports only pendulum and ``airflow.sdk`` (every
task imports what it runs inside its body), so parsing touches neither a database nor the network.
"""

# The line of a deployment's DAG file (``airflow-retry dags install FOLDER`` writes it).
MAINTENANCE_LINE = "from airflow_retry_provider.dags.maintenance import *  # noqa: F403"
