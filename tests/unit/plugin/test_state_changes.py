"""Every state-changing route of the plugin's app refuses a cross-site request (no server, no database)."""

from __future__ import annotations

import re

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.plugin.app import STATE_CHANGING, create_app


def _state_changing_routes() -> list[tuple[str, str]]:
    """Each (method, path) of the app that changes state, path parameters filled with 1."""
    app = create_app(db=ProviderDatabase(lambda: None), driver=False)
    found = [
        (method, re.sub(r"\{[^}]+\}", "1", route.path))
        for route in app.routes
        if isinstance(route, APIRoute)
        for method in sorted(route.methods & STATE_CHANGING)
    ]
    return found


ROUTES = _state_changing_routes()


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(db=ProviderDatabase(lambda: None), driver=False)) as client:
        yield client


def test_the_sweep_covers_the_routes_that_change_state():
    """The sweep sees every action: replay, park, dismiss, a job's cancel, a breaker's force."""
    paths = {path for _, path in ROUTES}
    assert {"/api/park", "/api/dismiss", "/api/jobs/1/cancel", "/api/dependencies/1/force"} <= paths, paths
    assert {"/api/preview", "/api/replays"} <= paths, paths


@pytest.mark.parametrize(("method", "path"), ROUTES)
@pytest.mark.parametrize(
    "content_type",
    [
        "application/x-www-form-urlencoded",  # a cross-site HTML form
        "text/plain",  # a form with enctype text/plain, or a fetch without a preflight
        "multipart/form-data; boundary=x",  # a form with a file field
        None,  # no body at all (the cancel route takes none)
    ],
)
def test_a_request_without_the_json_type_is_refused(client, method, path, content_type):
    """A state-changing request that is not Content-Type: application/json is refused with 415."""
    headers = {"Cookie": "_token=stolen"} | ({"Content-Type": content_type} if content_type else {})
    response = client.request(method, path, content="_token=x", headers=headers)
    assert response.status_code == 415, response.text
    assert "application/json" in response.json()["detail"]


@pytest.mark.parametrize(("method", "path"), ROUTES)
@pytest.mark.parametrize("origin", ["https://evil.example", "null", "http://testserver.evil.example"])
def test_a_request_from_another_origin_is_refused(client, method, path, origin):
    """A JSON request whose Origin is another site (or null) is refused with 403 before it reaches the route."""
    headers = {"Content-Type": "application/json", "Origin": origin, "Cookie": "_token=stolen"}
    response = client.request(method, path, content="{}", headers=headers)
    assert response.status_code == 403, response.text
    assert response.json()["detail"] == "a state-changing request from another origin is refused"


def test_a_same_origin_json_request_passes_the_guard(client):
    """The app's own pages (same Origin, JSON) get past the guard, to Airflow's authentication."""
    headers = {"Content-Type": "application/json", "Origin": "http://testserver"}
    response = client.post("/api/jobs/1/cancel", content="{}", headers=headers)
    assert response.status_code == 401, response.text  # Airflow's auth answers: no token
