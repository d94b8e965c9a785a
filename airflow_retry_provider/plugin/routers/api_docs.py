"""The JSON API's description: the OpenAPI schema and a page that reads it, both for signed-in users.

FastAPI's own ``/docs`` loads Swagger UI from a CDN; this page is rendered here from the schema,
with no asset from outside the deployment.

No ``from __future__ import annotations`` here: FastAPI reads the annotations at runtime.
"""

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from airflow_retry_provider.plugin.access import AccessDep
from airflow_retry_provider.plugin.rendering import page

router = APIRouter(tags=["docs"])

METHODS = ("get", "post", "put", "patch", "delete")


@router.get("/openapi.json", include_in_schema=False)
def openapi_schema(request: Request, access: AccessDep) -> dict[str, Any]:
    """The OpenAPI schema of this app."""
    schema: dict[str, Any] = request.app.openapi()
    return schema


@router.get("/docs", response_class=HTMLResponse, include_in_schema=False)
def docs_page(request: Request, access: AccessDep) -> HTMLResponse:
    """Every route of the JSON API with its method, summary and parameters."""
    schema = request.app.openapi()
    routes = [
        {
            "method": method.upper(),
            "path": path,
            "summary": operation.get("summary", ""),
            "description": operation.get("description", ""),
            "parameters": [p["name"] for p in operation.get("parameters", [])],
            "body": "requestBody" in operation,
        }
        for path, item in schema["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    ]
    return page(
        request, "docs.html", access, title=schema["info"]["title"], info=schema["info"], routes=routes
    )
