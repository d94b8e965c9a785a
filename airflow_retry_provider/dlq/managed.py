"""Which DAGs the dead-letter sweeper sweeps, and the cluster policy that marks the ones ``apply_profile`` manages.

A DAG is *policy-managed* when it carries the tag ``airflow-retry-provider`` or its id is listed
in the Airflow Variable ``airflow_retry_dlq_sweep_dags``. ``apply_profile`` cannot tag a DAG
itself (``default_args`` are built before the DAG exists), so the provider registers an Airflow
cluster policy (entry point ``airflow.policy``, see ``pyproject.toml``): when the dag-processor
parses a DAG, :func:`dag_policy` adds the tag if any of its tasks files dead letters
(:func:`~airflow_retry_provider.dlq.callback.file_dead_letter` among its failure callbacks). So
the sweeper files the letters of every DAG that uses a profile, even when the failure callback
could not.

The same policy refuses a DAG whose task's ``retries`` contradicts the ceiling of its
``ClassifiedRetryPolicy`` (a policy can stop early but cannot add attempts), wherever ``retries``
was set: on the task, in ``default_args``, in ``partial()`` or by the operator class. ``apply_profile``
catches what it can see; only the parsed DAG shows ``default_args=apply_profile(...)`` beside
``@task(retries=5)``. The DAG file then has an import error naming each task, both values and the fix.
"""

from __future__ import annotations

import sys
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
    "retries_contradiction",
]

hookimpl = pluggy.HookimplMarker("airflow.policy")  # airflow.policies.hookimpl, without importing Airflow


def files_dead_letters(task: Any) -> bool:
    """True if ``task`` (an operator) has the dead-letter failure callback ``apply_profile`` adds."""
    from airflow_retry_provider.dlq import callback  # imported when a DAG is parsed, not at start-up

    return callback.files_dead_letters(task)


def mark_managed(dag: Any) -> bool:
    """Tag ``dag`` ``airflow-retry-provider`` if one of its tasks files dead letters; True if it is tagged now."""
    if MANAGED_TAG in dag.tags:
        return True
    if not any(files_dead_letters(task) for task in dag.tasks):
        return False
    dag.tags.add(MANAGED_TAG)
    return True


def retries_contradiction(task: Any) -> str | None:
    """Why ``task``'s ``retries`` contradicts its ``ClassifiedRetryPolicy``'s ceiling, or None when it does not.

    A policy with a ceiling (a profile's ``max_attempts``, or its own) needs ``retries`` to be exactly
    ``max_attempts - 1 + infra_allowance`` (both budgets: the code's attempts and the reruns after a
    killed, evicted or lost try; the allowance is 0 while its kill switch is off): fewer and Airflow
    stops before the policy's last attempt, more and the policy stops at its own limit, silently. A
    policy without a ceiling follows the task's ``retries``.
    """
    module = sys.modules.get("airflow_retry_provider.retry_policy")  # not imported: no task holds one,
    policy = getattr(task, "retry_policy", None)  # and a DAG without the provider pays no import
    if module is None or not isinstance(policy, module.ClassifiedRetryPolicy) or policy.max_attempts is None:
        return None
    wanted = policy.retries_needed()
    if task.retries == wanted:
        return None
    source = f"retry profile {policy.profile.name!r}" if policy.profile is not None else "its retry_policy"
    return (
        f"task {task.task_id!r}: retries={task.retries!r} contradicts {source} "
        f"(max_attempts={policy.max_attempts} and infra_allowance={policy.allowance()}, so retries must be "
        f"{wanted}); remove retries={task.retries!r} "
        "from the task (or its default_args, partial() or operator), choose another profile, "
        "or opt the task out with retry_policy=None"
    )


class RetriesContradictionInTest(BaseException):
    """A contradicting ``retries`` in the DAG that ``dag.test()`` runs: it stops the test at once with
    the message. A BaseException on purpose: the DagBag of ``dag.test()`` turns every ``Exception`` of
    a policy into an import error it only logs, and the test then fails later with "the dag is not
    serialized", without the reason."""


def check_retries(dag: Any) -> None:
    """Refuse ``dag`` (Airflow's ``AirflowClusterPolicyViolation``, an import error of its file) when a
    task's ``retries`` contradicts its retry policy: see :func:`retries_contradiction`. Under
    ``dag.test()`` of that DAG, :class:`RetriesContradictionInTest` instead, which ends the test there."""
    problems = [problem for task in dag.tasks if (problem := retries_contradiction(task))]
    if problems:
        from airflow.exceptions import AirflowClusterPolicyViolation

        from airflow_retry_provider.airflow_compat import dag_id_under_test

        message = f"DAG {dag.dag_id!r}: " + "; ".join(problems)
        if dag_id_under_test() == dag.dag_id:
            raise RetriesContradictionInTest(message)
        raise AirflowClusterPolicyViolation(message)


@hookimpl
def dag_policy(dag: Any) -> None:
    """Airflow's cluster policy hook, run by the dag-processor on every DAG it parses: see
    :func:`check_retries` and :func:`mark_managed`."""
    check_retries(dag)
    mark_managed(dag)
