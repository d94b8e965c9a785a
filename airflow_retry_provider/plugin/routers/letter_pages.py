"""The dead-letter pages: the queue, one letter, a replay's preview and progress, the task-instance tab.

No ``from __future__ import annotations`` here: FastAPI reads the annotations at runtime.
"""

from typing import Any, Literal

from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
from airflow.api_fastapi.core_api.security import requires_access_dag
from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse
from pydantic import ValidationError

from airflow_retry_provider.dlq import group_impacts, newest_letter
from airflow_retry_provider.plugin.access import AccessDep, airflow_root
from airflow_retry_provider.plugin.deps import JobDep, replay_engine, tab_map_index
from airflow_retry_provider.plugin.letters import LettersDep
from airflow_retry_provider.plugin.models import (
    COUNT_CAP,
    GROUP_PAGE_SIZE,
    PAGE_FILTERS,
    PAGE_SIZE,
    GroupsCursor,
    Identifier,
    LettersCursor,
    PathLetterId,
    QueryFilters,
    QueryIds,
    SelectionBody,
    query_error,
)
from airflow_retry_provider.plugin.queries import next_letters
from airflow_retry_provider.plugin.rendering import page, query, ti_links

router = APIRouter(include_in_schema=False)


@router.get("/", response_class=HTMLResponse)
def letters_page(
    request: Request,
    access: AccessDep,
    filters: QueryFilters,
    letters: LettersDep,
    view: Literal["list", "groups"] = "list",
    before: LettersCursor = None,
    after: GroupsCursor = None,
):
    """The queue: filters, the list (newest first) or the groups by fingerprint, and the actions."""
    where = filters.to_letter_filter(letters.tz)
    with letters.views().reading() as q:
        dags = letters.readable(access, q)
        context: dict[str, Any] = {
            "filters": filters.cleaned(),
            "filter_query": query(filters.cleaned()),
            "view": view,
            "filter_fields": PAGE_FILTERS,
            # the values a filter's list offers: its declared choices, and the DAGs the user may read
            "filter_options": {
                **{field.name: field.choices for field in PAGE_FILTERS if field.choices},
                "dag_id": sorted(dags),
            },
            "can_edit": bool(access.permitted(dags, "PUT")),
            "letters": [],
            "groups": None,
            "next_query": None,
            "count": 0,
            "count_cap": COUNT_CAP,
        }
        if view == "groups":
            groups = q.groups(where, dags, GROUP_PAGE_SIZE, after)
            context["groups"] = groups
            fingerprints = (g.fingerprint for g in groups.groups)
            context["group_impacts"] = group_impacts(letters.store.db, fingerprints, dags)
            following = groups.next_page()
            if following:
                context["next_query"] = query({**filters.cleaned(), "view": "groups", **following})
        else:
            shown = q.letters(where, dags, PAGE_SIZE, before)
            context["letters"] = shown
            context["count"] = q.count(where, dags, COUNT_CAP + 1)
            following = next_letters(shown, PAGE_SIZE)
            if following:
                context["next_query"] = query({**filters.cleaned(), **following})
    return page(request, "letters.html", access, **context)


@router.get("/letters/{letter_id}", response_class=HTMLResponse)
def letter_page(request: Request, letter_id: PathLetterId, access: AccessDep, letters: LettersDep):
    """One letter: identity, links into Airflow, error, classification, timeline, replays, actions."""
    letter = letters.letter_for(letter_id, access)
    tries, tries_error = letters.tries(letter.dag_id, letter.run_id, letter.task_id, letter.map_index)
    return page(
        request,
        "detail.html",
        access,
        letter=letter,
        replays=letters.store.replays(letter.id),
        events=letters.store.events(letter.id),
        impact=letters.store.impact(letter.id),
        links=ti_links(airflow_root(request), letter),
        tries=tries,
        tries_error=tries_error,
        can_edit=bool(access.permitted([letter.dag_id], "PUT")),
    )


@router.get("/preview", response_class=HTMLResponse)
def preview_page(
    request: Request,
    access: AccessDep,
    filters: QueryFilters,
    letters: LettersDep,
    ids: QueryIds = [],  # noqa: B006 (FastAPI copies defaults)
    all_matching: bool = False,
    task_only: bool = False,
    latest: bool = False,
):
    """What a replay of the selection would do (Airflow's clear dry-run, same flags): nothing changes here.

    ``latest``: the replay runs on the DAG's latest version (Airflow's ``run_on_latest_version``).
    The form to confirm offers the letters Airflow's dry-run answered for, and for more than one, a
    choice of the canary: any of them (the newest by default, as a job picks it), or none.
    """
    try:
        body = SelectionBody(ids=ids, all_matching=all_matching, filter=filters)
    except ValidationError as exc:  # too many ids, or one out of range
        raise query_error(exc) from None
    chosen = letters.select(access, body)
    with replay_engine(request, letters.store) as (engine, _):
        preview = engine.preview(
            ids=[letter.id for letter in chosen],
            downstream=not task_only,
            run_on_latest_version=True if latest else None,
        )
    ready = [item.letter for item in preview.items if item.error is None]
    same = {
        **filters.cleaned(),
        "ids": ids,
        "all_matching": all_matching or None,
    }  # the links toggle one flag
    return page(
        request,
        "preview.html",
        access,
        preview=preview,
        minutes=preview.seconds / 60,
        ready=ready,
        ready_ids=[letter.id for letter in ready],
        canary_id=newest_letter(ready).id if len(ready) > 1 else None,
        back_query=query(filters.cleaned()),
        task_only_query=query({**same, "task_only": not task_only or None, "latest": latest or None}),
        latest_query=query({**same, "task_only": task_only or None, "latest": not latest or None}),
    )


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
def job_page(request: Request, access: AccessDep, job: JobDep):
    """The progress of a replay job, read from the table (any worker answers), with a Cancel button."""
    return page(
        request,
        "job.html",
        access,
        job=job.to_json(),
        can_cancel=bool(access.permitted(job.job.dag_ids, "PUT")),
    )


@router.get(
    "/ti",
    response_class=HTMLResponse,
    dependencies=[Depends(requires_access_dag(method="GET", access_entity=DagAccessEntity.TASK_INSTANCE))],
)
def task_instance_page(
    request: Request,
    access: AccessDep,
    letters: LettersDep,
    dag_id: Identifier,
    run_id: Identifier,
    task_id: Identifier,
    map_index: str = "-1",
):
    """The task-instance tab: that instance's letter, its replays and its tries in Airflow."""
    history = letters.ti_history(dag_id, run_id, task_id, tab_map_index(map_index))
    letter = history["letter"]
    return page(
        request,
        "ti.html",
        access,
        links=ti_links(airflow_root(request), letter) if letter else None,
        **history,
    )
