"""A circuit breaker per dependency, shared by every DAG and worker (docs/BREAKER.md).

The transitions are pure (:mod:`airflow_retry_provider.policy.breaker`); :mod:`.store` keeps
each dependency's breaker in PostgreSQL; :mod:`.guard` holds a task while its dependency's
breaker is open and tells the breaker how each try ended.
"""
