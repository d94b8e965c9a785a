"""The Deliveries page and its JSON (issue 48): today's deliveries with a deadline that a dead letter
blocks or blocked, each on track / at risk / lost, with its latest replay time and links to the
letters that block it (``dlq/deliveries.py`` reads them, ``policy/deliveries.py`` classifies).

A user sees a delivery when they may read its DAG or the DAG of a letter that blocks it, and only
the letters of DAGs they may read.

No ``from __future__ import annotations`` here: FastAPI reads the annotations at runtime.
"""

from datetime import datetime, timezone
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from airflow_retry_provider.dlq import DeliveryState, todays_deliveries
from airflow_retry_provider.plugin.access import Access, AccessDep
from airflow_retry_provider.plugin.deps import DatabaseDep
from airflow_retry_provider.plugin.rendering import page
from airflow_retry_provider.states import DELIVERY_STANDINGS

router = APIRouter()


def readable_deliveries(db: Any, access: Access, now: datetime) -> list[dict[str, Any]]:
    """Today's deliveries as JSON, cut to what ``access`` may read."""
    found: list[DeliveryState] = todays_deliveries(db, now)
    dags = {d.dag_id for d in found} | {letter.dag_id for d in found for letter in d.letters}
    permitted = access.permitted(dags, "GET")
    shown = []
    for delivery in found:
        letters = [letter for letter in delivery.letters if letter.dag_id in permitted]
        if delivery.dag_id not in permitted and not letters:
            continue
        item = delivery.to_json()
        item["letters"] = [letter.to_json() for letter in letters]
        shown.append(item)
    return shown


@router.get("/api/deliveries", tags=["deliveries"])
def deliveries_api(access: AccessDep, db: DatabaseDep) -> dict[str, Any]:
    """Today's deliveries (each in its own time zone) that a letter blocks or blocked: status
    (lost, at-risk, on-track), deadline, latest replay time, why, and the blocking letters."""
    now = datetime.now(timezone.utc)
    return {"as_of": now.isoformat(), "deliveries": readable_deliveries(db, access, now)}


@router.get("/deliveries", response_class=HTMLResponse, include_in_schema=False)
def deliveries_page(request: Request, access: AccessDep, db: DatabaseDep):
    """The Deliveries page."""
    now = datetime.now(timezone.utc)
    shown = readable_deliveries(db, access, now)
    counts = {status: sum(1 for d in shown if d["status"] == status) for status in DELIVERY_STANDINGS}
    return page(request, "deliveries.html", access, deliveries=shown, counts=counts, as_of=now)
