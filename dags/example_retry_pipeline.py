"""Example: a daily pipeline in Brasília time whose tasks use the provider's classified retries."""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, CronDataIntervalTimetable, task

BRASILIA = "America/Sao_Paulo"

with DAG(
    dag_id="example_retry_pipeline",
    description="Extract, transform and load one day of data, 07:00 Brasília time.",
    schedule=CronDataIntervalTimetable("0 7 * * *", timezone=BRASILIA),
    start_date=pendulum.datetime(2026, 11, 1, tz=BRASILIA),
    catchup=False,
    tags=["airflow-retry-provider", "example"],
) as dag:

    @task
    def extract(data_interval_start=None, data_interval_end=None) -> dict:
        """Pretend to extract the rows of one data interval."""
        return {"start": str(data_interval_start), "end": str(data_interval_end), "rows": 3}

    @task
    def load(batch: dict) -> int:
        """Pretend to load the extracted rows."""
        return int(batch["rows"])

    load(extract())
