"""The dead-letter pages and their JSON API: a FastAPI app that the plugin mounts on Airflow's api-server.

Every route sits behind Airflow's own authentication (``GetUserDep``: the bearer token or the UI's
``_token`` cookie) and authorization (the auth manager's ``is_authorized_dag`` on the task
instances of each letter's DAG). Lists and counts only ever include DAGs the user may read;
replay, park and dismiss need edit access to every DAG they touch, take the acting user from
Airflow's auth, accept POST with a JSON body only (every state-changing route, a job's cancel and a
breaker's force too, refuses another content type, 415, and a foreign ``Origin``, 403), and land in Airflow's Audit Log
(one row per DAG touched, refused attempts too) and in ``retry_replays``. The OpenAPI schema and
its page (``/openapi.json``, ``/docs``) need a signed-in user too, and every answer carries
``X-Content-Type-Options: nosniff``, ``X-Frame-Options: SAMEORIGIN`` and a content security policy
that allows the deployment's own origin only (inline scripts by a per-response nonce).

The routes live in :mod:`~airflow_retry_provider.plugin.routers`, one ``APIRouter`` per area; what
they share (who is asking, the database, Airflow's API, the time zone) in
:mod:`~airflow_retry_provider.plugin.deps`, on ``app.state``.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from urllib.parse import quote

from fastapi import Depends, FastAPI, HTTPException, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response

from airflow_retry_provider import settings
from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.hooks.airflow_api import AirflowApi
from airflow_retry_provider.plugin.access import URL_PREFIX, acting_user_api, airflow_root, default_api
from airflow_retry_provider.plugin.deps import ApiFactory, app_database, get_database, storable_query
from airflow_retry_provider.plugin.driver_thread import WORKER_HEADER, DriverThread, service_api
from airflow_retry_provider.plugin.rendering import page, templates
from airflow_retry_provider.plugin.routers import (
    actions,
    api_docs,
    deliveries,
    dependencies,
    letter_pages,
    letters_api,
    reconciliation,
    tries,
)
from airflow_retry_provider.settings import ui_timezone

__all__ = ["URL_PREFIX", "acting_user_api", "create_app"]

log = logging.getLogger(__name__)


def create_app(
    db: ProviderDatabase | None = None,
    api_factory: ApiFactory | None = None,
    url_prefix: str = URL_PREFIX,
    driver_api: Callable[[], AirflowApi] | None = None,
    driver: bool = True,
) -> FastAPI:
    """The dead-letter pages and JSON API.

    :param db: the provider's database; by default built on first use from the Airflow connection
        ``retry_provider_default``, on a connection pool (one connection per request).
    :param api_factory: builds Airflow's REST API client for a request and the user's token; by
        default :func:`~airflow_retry_provider.plugin.access.acting_user_api` on ``[api] base_url``
        (else this api-server on loopback, never the request's Host).
    :param url_prefix: where the plugin mounts this app (to link back to Airflow's own pages).
    :param driver_api: the Airflow REST client this worker's replay driver clears with; by default
        the connection ``retry_provider_airflow_api``.
    :param driver: run a replay driver in this process (started on the first request).
    """
    app = FastAPI(
        lifespan=start_threads,
        title="Dead letters (airflow-retry-provider)",
        description=(
            "Review, group, preview and replay the dead-letter queue. Authenticate as for Airflow's "
            "REST API: `Authorization: Bearer <token from POST /auth/token>` (or the UI's session)."
        ),
        version="1",
        docs_url=None,  # served by routers/api_docs.py, behind Airflow's auth
        redoc_url=None,
        openapi_url=None,
        dependencies=[Depends(storable_query)],  # before Airflow's own dependencies read the query
    )
    settings.check_all()  # start-up: a bad [retry_provider] value stops here, naming the setting and value
    tz = ui_timezone()
    app.state.url_prefix = url_prefix
    app.state.db = db
    app.state.api_factory = api_factory or default_api
    app.state.tz = tz
    app.state.templates = templates(tz)
    app.state.driver_thread = DriverThread(driver_api or service_api, enabled=driver)
    app.middleware("http")(run_driver)
    app.add_exception_handler(HTTPException, html_errors)
    app.add_exception_handler(RequestValidationError, bad_request)
    app.middleware("http")(security_headers)
    routers = (
        reconciliation.router,
        letter_pages.router,
        letters_api.router,
        actions.router,
        api_docs.router,
        tries.router,
        dependencies.router,
        deliveries.router,
    )
    for router in routers:
        app.include_router(router)
    app.middleware("http")(same_origin_json)  # added last: runs first, before any other work
    return app


@asynccontextmanager
async def start_threads(app: FastAPI) -> AsyncIterator[None]:
    """The api-server starts the app (Airflow enters each mounted app's lifespan): start this worker's
    replay driver and impact thread now, so letters filed before anyone opens a page get their impact
    and alerts (issue 58). Without the provider's database they start on the first request instead."""
    driver: DriverThread = app.state.driver_thread
    try:
        driver.ensure_started(app_database(app))
    except Exception as exc:  # no connection yet: the first request tries again
        log.warning(
            "airflow-retry-provider: background threads not started at start-up: %s", type(exc).__name__
        )
    yield


STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})


async def same_origin_json(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    """Every state-changing request is JSON from this deployment's own pages or a client, never a
    cross-site form: without ``Content-Type: application/json`` it is refused (415: a foreign page
    cannot send that type without a CORS preflight), and an ``Origin`` of another host is refused
    (403), whatever cookie it carries. A route without a body (a job's cancel) is guarded the same."""
    if request.method in STATE_CHANGING:
        media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if media_type != "application/json":
            return JSONResponse(
                {"detail": "a state-changing request must be sent as Content-Type: application/json"},
                status_code=status.HTTP_415_UNSUPPORTED_MEDIA_TYPE,
            )
        origin = request.headers.get("origin")
        if origin is not None and not _same_origin(origin, request):
            return JSONResponse(
                {"detail": "a state-changing request from another origin is refused"},
                status_code=status.HTTP_403_FORBIDDEN,
            )
    return await call_next(request)


def _same_origin(origin: str, request: Request) -> bool:
    """``origin`` names the host (and port) the request was sent to, as the browser or a proxy says it."""
    from urllib.parse import urlsplit

    try:
        netloc = urlsplit(origin).netloc.lower()
    except ValueError:
        return False
    hosts = {request.headers.get("host", "").lower(), request.headers.get("x-forwarded-host", "").lower()}
    return bool(netloc) and netloc in hosts - {""}


def content_security_policy(nonce: str) -> str:
    """Only the deployment's own origin; inline scripts only with this response's nonce."""
    return (
        "default-src 'self'; "
        f"script-src 'self' 'nonce-{nonce}'; "
        "style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; "
        "object-src 'none'; "
        "base-uri 'self'; "
        "form-action 'self'; "
        "frame-ancestors 'self'"
    )


async def security_headers(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    """Every answer: no MIME sniffing, framed only by Airflow's own UI, the CSP with a fresh nonce."""
    request.state.csp_nonce = nonce = secrets.token_urlsafe(16)
    response = await call_next(request)
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["X-Frame-Options"] = "SAMEORIGIN"
    response.headers["Content-Security-Policy"] = content_security_policy(nonce)
    return response


async def run_driver(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    """Start this worker's replay driver on its first request; say which worker answered."""
    driver: DriverThread = request.app.state.driver_thread
    driver.ensure_started(get_database(request))
    response = await call_next(request)
    response.headers[WORKER_HEADER] = driver.worker
    return response


async def html_errors(request: Request, exc: Exception) -> Response:
    """Pages answer errors with a page (and a link to sign in on 401); the API answers JSON."""
    assert isinstance(exc, HTTPException)
    wants_page = "/api/" not in request.url.path and "text/html" in request.headers.get("accept", "")
    if not wants_page:
        return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)
    login = f"{airflow_root(request)}/auth/login?next={quote(str(request.url), safe='')}"
    return page(
        request, "error.html", None, exc.status_code, code=exc.status_code, detail=exc.detail, login=login
    )


async def bad_request(request: Request, exc: Exception) -> Response:
    """Bad input answers 422 with where and what, as JSON."""
    assert isinstance(exc, RequestValidationError)
    errors = [{"loc": list(e.get("loc", ())), "msg": str(e.get("msg", ""))} for e in exc.errors()]
    return JSONResponse({"detail": errors}, status_code=status.HTTP_422_UNPROCESSABLE_CONTENT)
