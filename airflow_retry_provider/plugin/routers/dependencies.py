"""The Dependencies page and its JSON: each dependency's breaker, its failure rate, held tasks,
cool-down and history, and forcing it open, closed or back to automatic.

Reading needs read access to pools, forcing edit access to the dependency's pool (a dependency
is the pool of the same name, ``capacity.py``), from Airflow's auth manager. A force is POST with a
JSON body only, takes the acting user from Airflow's auth, and lands in Airflow's Audit Log (refused
attempts too) and in the breaker's own history (``retry_breaker_events``, with who and why).

No ``from __future__ import annotations`` here: FastAPI reads the annotations at runtime.
"""

from datetime import datetime, timezone
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Path, Request, status
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, ConfigDict, Field

from airflow_retry_provider.breaker.announce import Outage
from airflow_retry_provider.breaker.store import BreakerEvent, BreakerStatus, BreakerStore
from airflow_retry_provider.dlq import held_deliveries
from airflow_retry_provider.hooks.airflow_api import AirflowApiError
from airflow_retry_provider.plugin.access import Access, AccessDep, audit_action
from airflow_retry_provider.plugin.deps import DatabaseDep, api_for
from airflow_retry_provider.plugin.models import MAX_IDENTIFIER, MAX_REASON, FilterText, Storable
from airflow_retry_provider.plugin.rendering import page
from airflow_retry_provider.policy.breaker import BreakerSettings

router = APIRouter()

FORCE_EVENT = "retry_provider_breaker_force"
HISTORY = 20


class ForceBody(BaseModel):
    """Force a breaker: ``open`` (hold every task), ``closed`` (run every task) or ``auto`` (hand it back)."""

    model_config = ConfigDict(extra="forbid")

    state: Literal["open", "closed", "auto"]
    reason: Annotated[
        str, Field(min_length=1, max_length=MAX_REASON, description="why (kept in the history)"), Storable
    ]


DependencyName = Annotated[
    str, Path(min_length=1, max_length=MAX_IDENTIFIER, pattern=r"^[A-Za-z0-9_.\-]+$"), Storable
]


def breakers(db: DatabaseDep) -> BreakerStore:
    """The breakers, on the app's database (its pool in the api-server)."""
    return BreakerStore(db)


BreakersDep = Annotated[BreakerStore, Depends(breakers)]


def configured() -> dict[str, BreakerSettings]:
    """The breaker settings of the deployment's dependency map, by dependency ({} without a map)."""
    from airflow_retry_provider.capacity import CapacityError, load_dependencies

    try:
        found = load_dependencies()
    except (CapacityError, OSError, ValueError):
        return {}
    return {name: dep.breaker for name, dep in found.dependencies.items()}


def _outage_json(outage: Outage) -> dict[str, Any]:
    ended = outage.closed_at or outage.now
    return {
        "opened_at": outage.opened_at.isoformat(),
        "closed_at": outage.closed_at.isoformat() if outage.closed_at else None,
        "seconds": round((ended - outage.opened_at).total_seconds()),
        "failures_at_open": outage.failures_at_open,
        "calls_at_open": outage.calls_at_open,
        "opened_by": outage.opened_by,
        "tasks_held": outage.tasks_held,
        "dags_held": outage.dags_held,
        "attempts_saved": outage.holds,
        "released": outage.released,
        "expired": outage.expired,
        "probes": outage.probes,
    }


def _event_json(event: BreakerEvent) -> dict[str, Any]:
    return {
        "at": event.at.isoformat(),
        "from": event.from_status,
        "to": event.to_status,
        "actor": event.actor,
        "reason": event.reason,
    }


def dependency_json(
    name: str, status_: BreakerStatus | None, settings: BreakerSettings | None, store: BreakerStore
) -> dict[str, Any]:
    """One dependency as the page and the JSON show it."""
    breaker = status_.breaker if status_ else None
    calls = status_.calls_10m if status_ else 0
    failures = status_.failures_10m if status_ else 0
    return {
        "dependency": name,
        "state": breaker.effective if breaker else "closed",
        "status": breaker.status if breaker else "closed",
        "forced": breaker.forced if breaker else None,
        "enabled": settings.enabled if settings else None,
        "failures_10m": failures,
        "calls_10m": calls,
        "failure_rate_10m": round(failures / calls, 3) if calls else None,
        "held": status_.held if status_ else 0,
        "cooldown_seconds": breaker.cooldown_seconds if breaker else 0,
        "opened_at": breaker.opened_at.isoformat() if breaker and breaker.opened_at else None,
        "next_probe_at": breaker.probe_at.isoformat() if breaker and breaker.probe_at else None,
        "probe": breaker.probe_key if breaker else None,
        "settings": settings.to_dict() if settings else None,
        "history": [_event_json(e) for e in store.events(name, HISTORY)] if status_ else [],
        "outages": [_outage_json(o) for o in store.outages(name, HISTORY)] if status_ else [],
    }


def all_dependencies(store: BreakerStore, only: str | None = None) -> list[dict[str, Any]]:
    """Every dependency with a breaker row or a breaker in the map, by name (``only``: that one)."""
    rows = {s.dependency: s for s in store.statuses()}
    settings = configured()
    names = sorted(set(rows) | {n for n, s in settings.items() if s.enabled})
    return [dependency_json(n, rows.get(n), settings.get(n), store) for n in names if only in (None, "", n)]


def with_held_deliveries(
    request: Request, access: Access, store: BreakerStore, shown: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Each dependency not closed that holds tasks, with the deliveries they put at risk and the
    latest time each can start (``held_deliveries``; read from Airflow's REST API as the user, only
    for DAGs the user may read). Airflow not answering is a note, never an error page."""
    now = datetime.now(timezone.utc)
    for item in shown:
        item["held_deliveries"], item["held_deliveries_notes"] = [], []
        if item["state"] == "closed" or not item["held"]:
            continue
        try:
            with api_for(request) as api:
                found, notes = held_deliveries(
                    store.db, api, item["dependency"], now, lambda dags: access.permitted(dags, "GET")
                )
        except (AirflowApiError, OSError) as exc:
            item["held_deliveries_notes"] = [f"Airflow's API did not answer: {type(exc).__name__}"]
            continue
        item["held_deliveries"] = [held.to_json() for held in found]
        item["held_deliveries_notes"] = notes
    return shown


@router.get("/api/dependencies", tags=["dependencies"])
def dependencies_api(
    request: Request, access: AccessDep, store: BreakersDep, dependency: FilterText = None
) -> dict[str, Any]:
    """Each dependency's breaker: state, failure rate (10 minutes), held tasks, cool-down, next probe,
    settings, its newest transitions (who and why) and outages (tasks held, attempts saved); while
    it holds tasks, the deliveries they put at risk with each one's latest start time
    (``held_deliveries``)."""
    access.require_pool(None, "GET")
    return {"dependencies": with_held_deliveries(request, access, store, all_dependencies(store, dependency))}


@router.post("/api/dependencies/{dependency}/force", tags=["dependencies"])
def force(
    access: AccessDep, store: BreakersDep, dependency: DependencyName, body: ForceBody
) -> dict[str, Any]:
    """Force the breaker of ``dependency`` open or closed, or hand it back (``auto``), as you, with a reason."""
    try:
        access.require_pool(dependency, "PUT")
    except HTTPException:
        audit_action(access.actor, FORCE_EVENT, dependency=dependency, state=body.state, outcome="refused")
        raise
    known = {s.dependency for s in store.statuses()} | set(configured())
    if dependency not in known:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            f"dependency: no breaker named {dependency!r}; known: {sorted(known)}",
        )
    state = None if body.state == "auto" else body.state
    store.force(dependency, state, f"user:{access.actor}", body.reason)
    audit_action(
        access.actor,
        FORCE_EVENT,
        dependency=dependency,
        state=body.state,
        reason=body.reason,
        outcome="forced",
    )
    [shown] = all_dependencies(store, dependency)
    return shown


@router.get("/dependencies", response_class=HTMLResponse, include_in_schema=False)
def dependencies_page(request: Request, access: AccessDep, store: BreakersDep, dependency: FilterText = None):
    """The Dependencies page."""
    access.require_pool(None, "GET")
    shown = with_held_deliveries(request, access, store, all_dependencies(store, dependency))
    return page(request, "dependencies.html", access, dependencies=shown)
