"""The plugin's request dependencies, injected with ``Depends``: the provider's database, the letters'
store, the replay jobs, this worker's driver thread, Airflow's API as the signed-in user, the replay
engine, the UI's time zone, and the checks every request's parameters pass.

Everything shared lives on ``app.state`` (set by :func:`~airflow_retry_provider.plugin.app.create_app`):
``db`` (built once on first use), ``api_factory``, ``tz``, ``templates``, ``driver_thread`` (this worker's replay
driver) and ``url_prefix``. Who is asking is ``plugin/access.py``; the letters a request may see or
touch, ``plugin/letters.py``.

No ``from __future__ import annotations`` here: FastAPI reads the annotations at runtime.
"""

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated
from zoneinfo import ZoneInfo

from fastapi import Depends, FastAPI, HTTPException, Request, status
from fastapi.exceptions import RequestValidationError

from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.dlq import DeadLetterStore, JobStore, JobView, ReplayEngine
from airflow_retry_provider.hooks.airflow_api import AirflowApi
from airflow_retry_provider.plugin.access import AccessDep, request_token
from airflow_retry_provider.plugin.driver_thread import DriverThread
from airflow_retry_provider.plugin.models import INT32_MAX, PathJobId
from airflow_retry_provider.policy.text import storable

ApiFactory = Callable[[Request, str], AirflowApi]

_DB_LOCK = threading.Lock()


# -- every request: its parameters ---------------------------------------------------------------


def storable_query(request: Request) -> None:
    """Every query value must be storable (no NUL, no unpaired surrogate): a 422 naming the parameter.

    An app-wide dependency, so it runs before any other (Airflow's ``requires_access_dag`` reads
    ``dag_id`` from the query into its own database before a route's parameters are validated).
    """
    for name, value in request.query_params.multi_items():
        if storable(value) != value:
            raise RequestValidationError(
                [
                    {
                        "loc": ("query", name),
                        "msg": "Value error, holds a character that cannot be stored (NUL or an unpaired surrogate)",
                        "type": "value_error",
                    }
                ]
            )


def tab_map_index(value: str) -> int:
    """A tab's ``{MAP_INDEX}``: Airflow leaves the placeholder as is for an unmapped instance (-1).

    A number outside -1 .. 2**31 - 1 (the columns is an ``integer``) is a 422 naming ``map_index``.
    """
    try:
        index = int(value)
    except ValueError:
        return -1
    if not -1 <= index <= INT32_MAX:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT, f"map_index: {index} is outside -1 .. {INT32_MAX}"
        )
    return index


# -- the app's shared state ----------------------------------------------------------------------


def get_database(request: Request) -> ProviderDatabase:
    """The provider's database on ``app.state``, built once from ``retry_provider_default`` on first use,
    on a connection pool: each request's transaction has a connection of its own."""
    return app_database(request.app)


def app_database(app: FastAPI) -> ProviderDatabase:
    """:func:`get_database` for the app itself (its lifespan starts the background threads with it)."""
    state = app.state
    if state.db is None:
        with _DB_LOCK:
            if state.db is None:
                state.db = ProviderDatabase.pooled()
    found: ProviderDatabase = state.db
    return found


DatabaseDep = Annotated[ProviderDatabase, Depends(get_database)]


def get_store(db: DatabaseDep) -> DeadLetterStore:
    """The letters, on the app's database."""
    return DeadLetterStore(db)


StoreDep = Annotated[DeadLetterStore, Depends(get_store)]


def get_timezone(request: Request) -> ZoneInfo:
    """The UI's time zone (``[retry_provider] ui_timezone``), read once by ``create_app``."""
    tz: ZoneInfo = request.app.state.tz
    return tz


TimeZoneDep = Annotated[ZoneInfo, Depends(get_timezone)]


def get_driver(request: Request) -> DriverThread:
    """This api-server worker's replay driver (started on the worker's first request)."""
    driver: DriverThread = request.app.state.driver_thread
    return driver


DriverDep = Annotated[DriverThread, Depends(get_driver)]


def get_job_store(db: DatabaseDep) -> JobStore:
    return JobStore(db)


JobStoreDep = Annotated[JobStore, Depends(get_job_store)]


def requested_job(job_id: PathJobId, access: AccessDep, jobs: JobStoreDep) -> JobView:
    """The replay job ``job_id`` of the path (from the table: any worker answers), if the user may read its DAGs."""
    view = jobs.get(job_id)
    if view is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no replay job {job_id}")
    access.require(view.job.dag_ids, "GET")
    return view


JobDep = Annotated[JobView, Depends(requested_job)]


def api_for(request: Request) -> AirflowApi:
    """Airflow's REST API as the signed-in user (401 without a token)."""
    token = request_token(request)
    if not token:
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "Not authenticated")
    factory: ApiFactory = request.app.state.api_factory
    return factory(request, token)


@contextmanager
def replay_engine(request: Request, store: DeadLetterStore) -> Iterator[tuple[ReplayEngine, AirflowApi]]:
    """The replay engine on the store and Airflow's API as the signed-in user, closed on the way out."""
    with api_for(request) as api:
        try:
            engine = ReplayEngine(store, api)
        except ValueError as exc:
            raise HTTPException(status.HTTP_500_INTERNAL_SERVER_ERROR, str(exc)) from None
        yield engine, api
