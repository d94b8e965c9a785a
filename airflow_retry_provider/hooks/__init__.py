"""Thin hooks over Airflow's PostgresHook."""
