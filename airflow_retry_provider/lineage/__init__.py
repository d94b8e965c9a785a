"""Retries, dead letters and replays in OpenLineage events (docs/INSTALL.md, "Lineage").

Turned on in Airflow's configuration, with ``apache-airflow-providers-openlineage`` installed
(``pip install 'airflow-retry-provider[openlineage]'``)::

    [openlineage]
    custom_run_facets = airflow_retry_provider.lineage.run_facets

The OpenLineage provider's listener calls :func:`run_facets` in the task's worker, in the task
runner's process (or a fork of it, ``[openlineage] execute_in_thread``), for the START event and
the COMPLETE or FAIL event of each try, after the task's callbacks ran. It reads only what that
process holds: the retry policy's evaluation of the try, the letter the failure callback filed
and the replay its outcome closed (``dlq.filed_letter``, ``dlq.closed_replay``),
the breaker's verdict. It never opens a connection (a fork must not talk to the supervisor, and
a task never touches Airflow's metadata database) and never raises: a facet that cannot be
built is left out, and the event goes as it would without it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

RETRY_PROVIDER_FACET = "airflowRetryProvider"
RETRY_FACET = "retry"
SCHEMAS = Path(__file__).parent / "schemas"
"""The published JSON schemas of the two facets (copied to docs/lineage/)."""

__all__ = ["RETRY_FACET", "RETRY_PROVIDER_FACET", "SCHEMAS", "run_facets"]


def run_facets(ti: Any, ti_state: Any) -> dict[str, Any]:
    """``[openlineage] custom_run_facets``: our two facets of ``ti``'s current try; {} when none applies.

    :param ti: the task runner's ``RuntimeTaskInstance`` (on the scheduler or api-server a
        ``TaskInstance`` of the ORM, for which nothing is said).
    :param ti_state: ``running`` (START), ``success``, ``failed`` (FAIL, also for a try that will
        be retried) or ``skipped``.
    """
    try:
        return _run_facets(ti, str(getattr(ti_state, "value", ti_state)))
    except Exception as exc:  # lineage never fails a task or an event
        log.warning("airflow-retry-provider: no lineage facet for this try (%s)", type(exc).__name__)
        log.debug("airflow-retry-provider: the lineage facet's error", exc_info=True)
        return {}


def _run_facets(ti: Any, state: str) -> dict[str, Any]:
    from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance

    if not isinstance(ti, RuntimeTaskInstance):
        return {}  # an ORM task instance (scheduler, api-server): no callback of ours ran there
    from airflow_retry_provider.lineage import facts
    from airflow_retry_provider.lineage.facets import RetryProviderRunFacet, RetryRunFacet

    ours = _retry_provider(ti, state)
    dead_letter = ours.get("failure", {}).get("outcome") == facts.DEAD_LETTER
    facets: dict[str, Any] = {RETRY_FACET: RetryRunFacet(**_retry(ti, dead_letter))}
    if ours:
        facets[RETRY_PROVIDER_FACET] = RetryProviderRunFacet(**ours)
    return facets


def _retry_provider(ti: Any, state: str) -> dict[str, Any]:
    from airflow_retry_provider import dlq
    from airflow_retry_provider.airflow_compat import policy_with
    from airflow_retry_provider.alerts.notifiers import ui_base_url
    from airflow_retry_provider.breaker.guard import verdict_of
    from airflow_retry_provider.lineage import facts

    said: dict[str, Any] = {}
    if state == "failed":
        letter_id = dlq.filed_letter(ti)
        policy = policy_with(ti.task, "evaluation_for")
        evaluation = policy.evaluation_for({"ti": ti}, ti.try_number) if policy is not None else None
        said["failure"] = facts.failure_facts(evaluation, policy, letter_id, ui_base_url())
        if said["failure"] is None and letter_id is not None:  # another policy, or Airflow's own retries
            said["failure"] = facts.letter_only_facts(letter_id, ui_base_url())
        held = verdict_of(ti)
        said["hold"] = facts.hold_facts(*held) if held is not None else None
    if state in ("success", "failed"):
        replay = dlq.closed_replay(ti)
        if replay is not None:
            said["replay"] = facts.replay_facts(replay, ti.run_id, ui_base_url())
    return {k: v for k, v in said.items() if v is not None}


def _retry(ti: Any, dead_letter: bool) -> dict[str, Any]:
    """The retry facet's fields; a try that became a dead letter has no retry left, whatever Airflow's count."""
    from airflow_retry_provider.lineage import facts

    try_number = int(ti.try_number)
    max_tries = getattr(ti, "max_tries", None)
    original = previous = None
    if try_number > 1:
        original, previous = _run_id(ti, 1), _run_id(ti, try_number - 1)
    said = facts.retry_facts(
        try_number, max_tries if isinstance(max_tries, int) else None, original, previous
    )
    if dead_letter and "retries_left" in said:
        said["retries_left"] = 0
    return said


def _run_id(ti: Any, try_number: int) -> str | None:
    """The OpenLineage run id the provider's listener gives ``try_number`` of ``ti`` (deterministic)."""
    from airflow.providers.openlineage.plugins.adapter import OpenLineageAdapter

    dag_run = ti.get_template_context().get("dag_run")
    date = getattr(dag_run, "logical_date", None) or getattr(dag_run, "run_after", None)
    if date is None:
        return None
    return str(
        OpenLineageAdapter.build_task_instance_run_id(
            dag_id=ti.dag_id,
            task_id=ti.task_id,
            try_number=try_number,
            logical_date=date,
            map_index=getattr(ti, "map_index", -1),
        )
    )
