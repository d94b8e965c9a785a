"""Local, Docker-free stacks for the demo, the tests and the benchmarks.

``postgres`` starts a throwaway PostgreSQL cluster from the local binaries (or uses the
server named by ``AIRFLOW_RETRY_PG_DSN``); ``airflow`` runs the four Airflow 3 processes
against it. Nothing here is imported by DAGs or tasks.
"""
