"""The pages' letter filters follow the declaration of ``dlq/filters.py``: the query parameters, their
descriptions and bounds, the body's filter and the filter the store runs (no server, no database)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from fastapi import FastAPI, HTTPException
from fastapi.testclient import TestClient
from pydantic import ValidationError

from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.dlq import LETTER_FILTERS, LetterFilter
from airflow_retry_provider.plugin.app import create_app
from airflow_retry_provider.plugin.models import (
    MAX_DATE,
    MAX_FILTER,
    PAGE_FILTERS,
    Filters,
    QueryFilters,
    SelectionBody,
)

SAO_PAULO = ZoneInfo("America/Sao_Paulo")


@pytest.fixture(scope="module")
def client() -> TestClient:
    """An app with one route that answers the filters it read from the query string."""
    app = FastAPI()

    @app.get("/filters")
    def read(filters: QueryFilters, view: str = "list") -> dict[str, Any]:
        return {"cleaned": filters.cleaned(), "newer_version": filters.model_dump()["newer_version"]}

    return TestClient(app)


def test_the_pages_take_every_declared_filter_but_the_ids() -> None:
    """Every declared filter is a field of the pages' model, in order; ids are selected otherwise."""
    assert [field.name for field in PAGE_FILTERS] == [f.name for f in LETTER_FILTERS if f.name != "ids"]
    assert list(Filters.model_fields) == [field.name for field in PAGE_FILTERS]


@pytest.mark.parametrize("path", ["/api/letters", "/api/groups", "/api/export.csv", "/api/export.json"])
def test_each_filter_is_a_query_parameter_described_in_the_openapi_schema(path: str) -> None:
    """The JSON API's and the exports' schema lists each filter with its description from the declaration."""
    schema = create_app(db=ProviderDatabase(lambda: None), driver=False).openapi()
    parameters = {p["name"]: p for p in schema["paths"][path]["get"]["parameters"] if p["in"] == "query"}
    for field in PAGE_FILTERS:
        assert parameters[field.name]["description"] == field.query_description()
    assert parameters["since"]["description"] == "from this day (inclusive) or instant"
    assert parameters["until"]["description"] == "to this day (inclusive) or before this instant"
    assert (
        parameters["newer_version"]["description"]
        == '"yes": only letters whose DAG has a newer version deployed'
    )


def test_the_query_string_gives_the_filters_and_leaves_the_other_parameters(client: TestClient) -> None:
    """Each filter is its own parameter; an empty flag is no flag; the page's own parameters are not filters."""
    answer = client.get(
        "/filters", params={"dag_id": " d ", "status": "dlq", "newer_version": "", "view": "groups"}
    )
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"cleaned": {"dag_id": "d", "status": "dlq"}, "newer_version": None}
    assert client.get("/filters", params={"newer_version": "yes"}).json()["newer_version"] == "yes"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("dag_id", "d" * (MAX_FILTER + 1)),
        ("fingerprint", "f" * (MAX_FILTER + 1)),
        ("since", "2" * (MAX_DATE + 1)),
        ("newer_version", "no"),
        ("task_id", "t\x00"),
    ],
)
def test_a_value_beyond_its_bounds_is_a_422_naming_the_parameter(
    client: TestClient, name: str, value: str
) -> None:
    """Too long, not ``yes`` for a flag, or not storable: 422 located at the query parameter."""
    answer = client.get("/filters", params={name: value})
    assert answer.status_code == 422, answer.text
    assert ["query", name] in [error["loc"] for error in answer.json()["detail"]]


def test_the_filters_become_the_stores_filter_in_the_uis_time_zone() -> None:
    """Days start in the UI's zone, ``until`` counts its whole day, ``yes`` turns the flag on."""
    filters = Filters(dag_id="d", since="2026-11-01", until="2026-11-01", newer_version="yes")
    assert filters.to_letter_filter(SAO_PAULO) == LetterFilter(
        dag_id="d",
        since=datetime(2026, 11, 1, tzinfo=SAO_PAULO),
        until=datetime(2026, 11, 2, tzinfo=SAO_PAULO),
        newer_version=True,
    )
    with pytest.raises(HTTPException) as refused:
        Filters(until="2026-13-01").to_letter_filter(SAO_PAULO)
    assert refused.value.status_code == 400 and "bad date" in refused.value.detail


def test_a_bodys_filter_refuses_a_field_that_is_no_filter() -> None:
    """An action's body names only declared filters: another key is refused, naming it."""
    with pytest.raises(ValidationError, match="owner"):
        SelectionBody.model_validate({"all_matching": True, "filter": {"owner": "me"}})
