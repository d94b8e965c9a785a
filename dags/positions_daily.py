"""positions_daily: a complete DAG file under a retry profile of its own, with a delivery deadline."""

from datetime import timedelta

import pendulum
from airflow.sdk import DAG, task

from airflow_retry_provider import Backoff, DeliveryDeadline, Profile, apply_profile, register_profile

# 3 attempts (retries=4: 2 + 2 reruns of killed tries), 5 min then 10 min apart, each run killed after 20 min
register_profile(
    Profile(
        name="positions",
        max_attempts=3,
        backoff=Backoff(base=timedelta(minutes=5), multiplier=2, cap=timedelta(hours=1), jitter=0.25),
        execution_timeout=timedelta(minutes=20),
        description="the daily positions load: two retries, never past 09:00",
        safe_to_repeat=True,  # it replaces the interval's rows, so a timeout may be retried
    ),
    replace=True,  # the file is parsed again and again
)

with DAG(
    dag_id="positions_daily",
    schedule="0 6 * * *",
    start_date=pendulum.datetime(2026, 11, 1, tz="America/Sao_Paulo"),
    catchup=False,
    default_args=apply_profile(
        {"owner": "data"},
        "positions",
        # delivered by 09:00 in Sao Paulo the day after the data interval ends: a retry that could not
        # finish by then (its run plus the check of its output) is not tried, it is a dead letter
        deadline=DeliveryDeadline(at="09:00", timezone="America/Sao_Paulo", days_after=1),
        expected_duration=timedelta(minutes=15),
        validation=timedelta(minutes=5),
    ),
) as dag:

    @task
    def load_positions(data_interval_start=None, data_interval_end=None) -> int:
        """Load the interval's positions (your code here): a failure is classified, then retried or filed."""
        print(f"loading positions from {data_interval_start} to {data_interval_end}")
        return 0

    load_positions()
