"""The provider's maintenance DAGs, for one line in a file of a deployment's DAG folder.

``from airflow_retry_provider.dags.maintenance import *`` puts the four DAGs in that file's
globals, where Airflow's dag-processor finds them (they are created paused, like every DAG,
unless ``[core] dags_are_paused_at_creation`` is off):

* ``dead_letter_sweeper``: every 10 minutes, files failures no callback filed, syncs replays,
  sends alerts, emits gauges;
* ``medallion_reconciliation``: every 15 minutes, the gaps between bronze, silver and gold and
  each connector's health, per workspace;
* ``retry_provider_retention``: daily, deletes rows past their age;
* ``retry_provider_work_sweeper``: hourly, settles work units left running past their lease
  (off until ``[retry_provider] work_sweeper_enabled``).
"""

from __future__ import annotations

from airflow_retry_provider.dags.dead_letter_sweeper import dag as dead_letter_sweeper
from airflow_retry_provider.dags.medallion_reconciliation import dag as medallion_reconciliation
from airflow_retry_provider.dags.retention import dag as retry_provider_retention
from airflow_retry_provider.dags.work_sweeper import dag as retry_provider_work_sweeper

__all__ = [
    "dead_letter_sweeper",
    "medallion_reconciliation",
    "retry_provider_retention",
    "retry_provider_work_sweeper",
]
