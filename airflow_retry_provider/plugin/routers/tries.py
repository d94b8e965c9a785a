"""The Retries tab of a task instance and its JSON: every try, what decided it, and what comes next.

No ``from __future__ import annotations`` here: FastAPI reads the annotations at runtime.
"""

import logging
from typing import Any

from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
from airflow.api_fastapi.core_api.security import requires_access_dag
from fastapi import APIRouter, Depends, HTTPException, Request, status
from fastapi.responses import HTMLResponse

from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.dlq import DeadLetterStore, FailedTry, Letter
from airflow_retry_provider.plugin.access import AccessDep
from airflow_retry_provider.plugin.deps import DatabaseDep, tab_map_index
from airflow_retry_provider.plugin.models import Identifier, MapIndex
from airflow_retry_provider.plugin.queries import (
    LetterViews,
    explain_with_letter,
    infra_allowance,
    retry_history,
    with_recorded_classes,
)
from airflow_retry_provider.plugin.rendering import page
from airflow_retry_provider.policy import redact

log = logging.getLogger(__name__)

router = APIRouter(
    dependencies=[Depends(requires_access_dag(method="GET", access_entity=DagAccessEntity.TASK_INSTANCE))]
)


def history_of(
    db: ProviderDatabase, dag_id: str, run_id: str, task_id: str, map_index: int
) -> dict[str, Any]:
    """The task instance's retry history (404 if Airflow has no such task instance), the try that
    dead-lettered explained by its letter where Airflow kept no reason (``explain_with_letter``), and
    each try's recorded class and whether it spent an attempt (``with_recorded_classes``)."""
    found = retry_history(dag_id, run_id, task_id, map_index)
    if found is None:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            f"no task instance dag_id={dag_id!r} run_id={run_id!r} task_id={task_id!r} map_index={map_index}",
        )
    letter: Letter | None = None
    recorded: list[FailedTry] = []
    found["letter_error"] = None
    try:
        letter = LetterViews(db).letter_of_ti(dag_id, run_id, task_id, map_index)
        recorded = DeadLetterStore(db).failed_tries(dag_id, run_id, task_id, map_index)
    except Exception as exc:  # the provider's database is down: Airflow's tries are still worth showing
        found["letter_error"] = redact(f"{type(exc).__name__}: {exc}")[:300]
        log.warning(
            "airflow-retry-provider: the Retries tab could not read the letter: %s", found["letter_error"]
        )
    found["letter_id"] = letter.id if letter else None
    explained = explain_with_letter(found["tries"], letter)
    found["infra_allowance"] = infra_allowance(explained)
    found["tries"] = with_recorded_classes(explained, recorded, found["infra_allowance"])
    return found


@router.get("/api/tries", tags=["tries"])
def tries_api(
    access: AccessDep,
    db: DatabaseDep,
    dag_id: Identifier,
    run_id: Identifier,
    task_id: Identifier,
    map_index: MapIndex = -1,
) -> dict[str, Any]:
    """Every try of a task instance (start, end, state, delay chosen, reason and what decided it,
    and where the reason came from: ``source`` ``airflow``; for the try that dead-lettered when
    Airflow kept no reason, ``letter``; for a try that ended with no exception, ``provider``, the
    class the infra watcher recorded), the host it ran on, whether it spent one of the author's
    attempts (``spent_attempt``; the profile's ``infra_allowance``), when the next try starts, and
    the attempts still ahead under its profile."""
    return history_of(db, dag_id, run_id, task_id, map_index)


@router.get("/tries", response_class=HTMLResponse, include_in_schema=False)
def tries_page(
    request: Request,
    access: AccessDep,
    db: DatabaseDep,
    dag_id: Identifier,
    run_id: Identifier,
    task_id: Identifier,
    map_index: str = "-1",
):
    """The Retries tab."""
    return page(
        request, "tries.html", access, ti=history_of(db, dag_id, run_id, task_id, tab_map_index(map_index))
    )
