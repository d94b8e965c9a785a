"""Which DAGs the dead-letter sweeper sweeps, and the cluster policy that marks the ones ``apply_profile`` manages.

A DAG is *policy-managed* when it carries the tag ``airflow-retry-provider`` or its id is listed
in the Airflow Variable ``airflow_retry_dlq_sweep_dags``. ``apply_profile`` cannot tag a DAG
itself (``default_args`` are built before the DAG exists), so the provider registers an Airflow
cluster policy (entry point ``airflow.policy``, see ``pyproject.toml``): when the dag-processor
parses a DAG, :func:`dag_policy` adds the tag if any of its tasks files dead letters
(:func:`~airflow_retry_provider.dlq.callback.file_dead_letter` among its failure callbacks). So
the sweeper files the letters of every DAG that uses a profile, even when the failure callback
could not.
"""

from __future__ import annotations

from typing import Any

import pluggy

from airflow_retry_provider.dlq.models import MANAGED_TAG, SWEEP_VARIABLE, parse_dag_list

__all__ = [
    "MANAGED_TAG",
    "SWEEP_VARIABLE",
    "dag_policy",
    "files_dead_letters",
    "mark_managed",
    "parse_dag_list",
]

hookimpl = pluggy.HookimplMarker("airflow.policy")  # airflow.policies.hookimpl, without importing Airflow


def files_dead_letters(task: Any) -> bool:
    """True if ``task`` (an operator) has the dead-letter failure callback ``apply_profile`` adds."""
    from airflow_retry_provider.dlq.callback import file_dead_letter

    callbacks = getattr(task, "on_failure_callback", None)
    if callbacks is None:
        return False
    listed = list(callbacks) if isinstance(callbacks, (list, tuple)) else [callbacks]
    return any(callback is file_dead_letter for callback in listed)


def mark_managed(dag: Any) -> bool:
    """Tag ``dag`` ``airflow-retry-provider`` if one of its tasks files dead letters; True if it is tagged now."""
    if MANAGED_TAG in dag.tags:
        return True
    if not any(files_dead_letters(task) for task in dag.tasks):
        return False
    dag.tags.add(MANAGED_TAG)
    return True


@hookimpl
def dag_policy(dag: Any) -> None:
    """Airflow's cluster policy hook, run by the dag-processor on every DAG it parses: see :func:`mark_managed`."""
    mark_managed(dag)
