"""The letters as JSON: lists, groups, one letter, a task instance's history, and the exports.

No ``from __future__ import annotations`` here: FastAPI reads the annotations at runtime.
"""

from collections.abc import Iterator
from typing import Annotated, Any

from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
from airflow.api_fastapi.core_api.security import requires_access_dag
from fastapi import APIRouter, Depends, HTTPException, Query, status
from fastapi.responses import StreamingResponse
from starlette.background import BackgroundTask

from airflow_retry_provider import settings
from airflow_retry_provider.dlq import group_impacts
from airflow_retry_provider.plugin.access import Access, AccessDep
from airflow_retry_provider.plugin.letters import Letters, LettersDep
from airflow_retry_provider.plugin.models import (
    COUNT_CAP,
    GROUP_PAGE_SIZE,
    PAGE_SIZE,
    Filters,
    GroupsCursor,
    Identifier,
    LettersCursor,
    MapIndex,
    PathLetterId,
    QueryFilters,
)
from airflow_retry_provider.plugin.queries import ExportsBusy, LetterExport, next_letters
from airflow_retry_provider.plugin.rendering import csv_stream, json_lines

router = APIRouter(prefix="/api")


@router.get("/letters", tags=["letters"])
def list_letters(
    access: AccessDep,
    filters: QueryFilters,
    letters: LettersDep,
    limit: Annotated[int, Query(ge=1, le=500)] = PAGE_SIZE,
    before: LettersCursor = None,
) -> dict[str, Any]:
    """Letters of the DAGs you may read, newest first; pass ``next`` back for the following page."""
    where = filters.to_letter_filter(letters.tz)
    with letters.views().reading() as q:
        dags = letters.readable(access, q)
        shown = q.letters(where, dags, limit, before)
        count = q.count(where, dags, COUNT_CAP + 1)
    return {
        "letters": [letter.to_json() for letter in shown],
        "count": min(count, COUNT_CAP),
        "count_is_capped": count > COUNT_CAP,
        "next": next_letters(shown, limit),
    }


@router.get("/groups", tags=["letters"])
def list_groups(
    access: AccessDep,
    filters: QueryFilters,
    letters: LettersDep,
    limit: Annotated[int, Query(ge=1, le=500)] = GROUP_PAGE_SIZE,
    after: GroupsCursor = None,
) -> dict[str, Any]:
    """Letters grouped by fingerprint (one root cause each), biggest group first; each with what its
    letters still in the way block (``impact``: summed and deduplicated, null before any is computed)."""
    with letters.views().reading() as q:
        dags = letters.readable(access, q)
        groups = q.groups(filters.to_letter_filter(letters.tz), dags, limit, after)
    impacts = group_impacts(letters.store.db, (g.fingerprint for g in groups.groups), dags)
    return {
        "groups": [
            {**g.to_json(), "impact": impacts[g.fingerprint].to_json() if g.fingerprint in impacts else None}
            for g in groups.groups
        ],
        "total_groups": groups.total_groups,
        "total_letters": groups.total_letters,
        "next": groups.next_page(),
    }


@router.get("/letters/{letter_id}", tags=["letters"])
def get_letter(letter_id: PathLetterId, access: AccessDep, letters: LettersDep) -> dict[str, Any]:
    """One letter, its replays, its history (every event, oldest first) and what it blocks
    (``impact``: null until computed)."""
    letter = letters.letter_for(letter_id, access)
    impact = letters.store.impact(letter.id)
    return {
        "letter": letter.to_json(),
        "replays": [r.to_json() for r in letters.store.replays(letter.id)],
        "history": [e.to_json() for e in letters.store.events(letter.id)],
        "impact": impact.to_json() if impact is not None else None,
    }


def start_export(access: Access, filters: Filters, letters: Letters) -> LetterExport:
    """The signed-in user's export of the filter, its slot taken (429 naming the limit when none is free)."""
    limit, concurrency = settings.export_max_letters(), settings.export_concurrency_per_user()
    export = LetterExport(
        letters.store.db,
        filters.to_letter_filter(letters.tz),
        letters.readable(access),
        access.actor,
        limit,
        concurrency,
    )
    try:
        return export.open()
    except ExportsBusy:
        raise HTTPException(
            status.HTTP_429_TOO_MANY_REQUESTS,
            f"export_concurrency_per_user: you already run {concurrency} export(s), the most allowed at once; "
            "try again when one has finished",
            headers={"Retry-After": "10"},
        ) from None


def export_response(
    export: LetterExport, body: Iterator[str], media_type: str, filename: str
) -> StreamingResponse:
    return StreamingResponse(
        body,
        media_type=media_type,
        headers={
            "Content-Disposition": f'attachment; filename="{filename}"',
            "X-Export-Cut": "true" if export.cut else "false",
            "X-Export-Max-Letters": str(export.limit),
        },
        background=BackgroundTask(export.close),
    )


@router.get("/export.csv", tags=["export"], response_class=StreamingResponse)
def export_csv(access: AccessDep, filters: QueryFilters, letters: LettersDep) -> StreamingResponse:
    """Every letter matching the filter (of the DAGs you may read) as CSV, at most ``[retry_provider]
    export_max_letters``; a longer export ends with a ``# cut`` row and says ``X-Export-Cut: true``."""
    export = start_export(access, filters, letters)
    body = csv_stream(export.letters(), export.limit if export.cut else None)
    return export_response(export, body, "text/csv; charset=utf-8", "dead-letters.csv")


@router.get("/export.json", tags=["export"], response_class=StreamingResponse)
def export_json(access: AccessDep, filters: QueryFilters, letters: LettersDep) -> StreamingResponse:
    """Every letter matching the filter (of the DAGs you may read) as ``{"letters": [...], "count", "cut",
    "max_letters"}``, at most ``[retry_provider] export_max_letters`` (``cut`` true, and ``X-Export-Cut``)."""
    export = start_export(access, filters, letters)
    body = json_lines(export.letters(), export.limit, export.cut)
    return export_response(export, body, "application/json", "dead-letters.json")


@router.get(
    "/task-instance",
    tags=["letters"],
    dependencies=[Depends(requires_access_dag(method="GET", access_entity=DagAccessEntity.TASK_INSTANCE))],
)
def task_instance(
    access: AccessDep,
    letters: LettersDep,
    dag_id: Identifier,
    run_id: Identifier,
    task_id: Identifier,
    map_index: MapIndex = -1,
) -> dict[str, Any]:
    """A task instance's letter, its replays, and its tries as Airflow's REST API reports them."""
    history = letters.ti_history(dag_id, run_id, task_id, map_index)
    letter = history["letter"]
    return {
        "letter": letter.to_json() if letter else None,
        "replays": [r.to_json() for r in history["replays"]],
        "tries": [t.to_json() for t in history["tries"]],
        "tries_error": history["tries_error"],
    }
