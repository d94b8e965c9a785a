"""The plugin's shared dependencies, injected with ``Depends``: who is asking, the store, the Airflow API
as the signed-in user, the replay engine, the UI's time zone, and the letters a request may see or touch.

Everything shared lives on ``app.state`` (set by :func:`~airflow_retry_provider.plugin.app.create_app`):
``store`` (built once on first use), ``api_factory``, ``tz``, ``templates``, ``jobs`` (this worker's replay
driver) and ``url_prefix``.

No ``from __future__ import annotations`` here: FastAPI reads the annotations at runtime.
"""

import json
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo

from airflow.api_fastapi.core_api.security import GetUserDep
from fastapi import Depends, HTTPException, Request, status
from fastapi.exceptions import RequestValidationError

from airflow_retry_provider.dlq.jobs import JobStore, JobView
from airflow_retry_provider.dlq.models import Actor, Letter
from airflow_retry_provider.dlq.replay import DEFAULT_SELECTION_LIMIT, ReplayEngine
from airflow_retry_provider.dlq.store import DeadLetterStore, LetterFilter
from airflow_retry_provider.hooks.airflow_api import AirflowApi, AirflowApiError, ApiCredentials
from airflow_retry_provider.plugin.jobs import WorkerDriver
from airflow_retry_provider.plugin.models import INT32_MAX, PathJobId, SelectionBody
from airflow_retry_provider.plugin.queries import LetterViews, Try, task_instance_tries
from airflow_retry_provider.policy import redact
from airflow_retry_provider.policy.text import storable

URL_PREFIX = "/retry-provider"

ApiFactory = Callable[[Request, str], AirflowApi]

_STORE_LOCK = threading.Lock()


# -- Airflow: auth, URLs, the REST API as the signed-in user ------------------------------------


def acting_user_api(base_url: str, token: str, timeout: float = 30.0) -> AirflowApi:
    """Airflow's REST API called with the signed-in user's own token, so Airflow checks their rights again.

    :param base_url: where Airflow's API is (``[api] base_url``, else loopback).
    :param token: the user's JWT, from the Authorization header or Airflow's ``_token`` cookie.
    """
    return AirflowApi(ApiCredentials(base_url, "", ""), timeout=timeout, token=token)


def request_token(request: Request) -> str | None:
    """The caller's Airflow token, read where ``GetUserDep`` reads it (header first, then cookie)."""
    from airflow.api_fastapi.auth.managers.base_auth_manager import COOKIE_NAME_JWT_TOKEN

    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip() or None
    return request.cookies.get(COOKIE_NAME_JWT_TOKEN)


def airflow_root(request: Request) -> str:
    """The path Airflow itself is served under (empty at the root), from where this app is mounted."""
    root = str(request.scope.get("root_path", ""))
    prefix = str(getattr(request.app.state, "url_prefix", URL_PREFIX))
    return root[: -len(prefix)] if prefix and root.endswith(prefix) else ""


def airflow_base_url() -> str:
    """Airflow's API base URL: ``[api] base_url`` when set, else this api-server on loopback.

    Never the request's Host header: a caller could point the api-server's own calls (with the
    caller's token) at any host.
    """
    from airflow.configuration import conf

    configured = conf.get("api", "base_url", fallback=None)
    if configured:
        return str(configured).rstrip("/")
    scheme = "https" if conf.get("api", "ssl_cert", fallback="") else "http"
    return f"{scheme}://127.0.0.1:{conf.getint('api', 'port', fallback=8080)}"


def default_api(request: Request, token: str) -> AirflowApi:
    return acting_user_api(airflow_base_url(), token)


def team_names(dag_ids: list[str]) -> dict[str, str | None]:
    """Team of each DAG in multi-team mode (from Airflow's metadata, as ``requires_access_dag`` does)."""
    from airflow.configuration import conf

    if not dag_ids or not conf.getboolean("core", "multi_team", fallback=False):
        return {}
    from airflow.models.dag import DagModel

    return dict(DagModel.get_dag_id_to_team_name_mapping(dag_ids))


class Access:
    """What the signed-in user may do with the task instances of which DAGs (Airflow's auth manager)."""

    def __init__(self, user: Any, manager: Any) -> None:
        self.user = user
        self.manager = manager
        self._cache: dict[tuple[str, str], bool] = {}

    @property
    def actor(self) -> str:
        return str(self.user.get_name())

    def who(self, source: str = "ui") -> Actor:
        """The signed-in user as the actor of a change made from the pages (``ui``) or the JSON API (``api``)."""
        return Actor(self.actor, source)

    def permitted(self, dag_ids: Iterable[str], method: Literal["GET", "PUT"]) -> set[str]:
        """The subset of ``dag_ids`` whose task instances the user may read (GET) or edit (PUT)."""
        from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity, DagDetails

        todo = sorted({d for d in dag_ids if (method, d) not in self._cache})
        teams = team_names(todo)
        for dag_id in todo:
            self._cache[(method, dag_id)] = bool(
                self.manager.is_authorized_dag(
                    method=method,
                    user=self.user,
                    access_entity=DagAccessEntity.TASK_INSTANCE,
                    details=DagDetails(id=dag_id, team_name=teams.get(dag_id)),
                )
            )
        return {d for d in dag_ids if self._cache[(method, d)]}

    def require(self, dag_ids: Iterable[str], method: Literal["GET", "PUT"]) -> None:
        wanted = set(dag_ids)
        if self.permitted(wanted, method) != wanted:
            raise HTTPException(status.HTTP_403_FORBIDDEN, "Forbidden")


def audit(actor: str, event: str, letters: Iterable[Letter], **details: Any) -> None:
    """Airflow's Audit Log: one row per DAG the letters belong to, their ids in ``extra``.

    The DAG comes from the letters themselves, never from the request body; ``details`` (an
    outcome, a reason) are redacted before they are written.
    """
    from airflow.models.log import Log
    from airflow.utils.session import create_session

    by_dag: dict[str, list[int]] = defaultdict(list)
    for letter in letters:
        by_dag[letter.dag_id].append(letter.id)
    extra = {k: redact(v) if isinstance(v, str) else v for k, v in details.items()}
    with create_session() as session:
        for dag_id, ids in sorted(by_dag.items()):
            session.add(
                Log(
                    event=event,
                    owner=actor,
                    owner_display_name=actor,
                    dag_id=dag_id,
                    extra=json.dumps({**extra, "letter_ids": sorted(ids)}),
                )
            )


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


def access_dep(user: GetUserDep) -> Access:
    """The signed-in user (401 without a valid token) and Airflow's auth manager."""
    from airflow.api_fastapi.app import get_auth_manager

    return Access(user, get_auth_manager())


AccessDep = Annotated[Access, Depends(access_dep)]


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


def get_store(request: Request) -> DeadLetterStore:
    """The dead-letter store on ``app.state``, built once from ``retry_provider_default`` on first use,
    on a connection pool: each request's transaction has a connection of its own."""
    state = request.app.state
    if state.store is None:
        with _STORE_LOCK:
            if state.store is None:
                state.store = DeadLetterStore.pooled()
    found: DeadLetterStore = state.store
    return found


StoreDep = Annotated[DeadLetterStore, Depends(get_store)]


def get_timezone(request: Request) -> ZoneInfo:
    """The UI's time zone (``[retry_provider] ui_timezone``), read once by ``create_app``."""
    tz: ZoneInfo = request.app.state.tz
    return tz


TimeZoneDep = Annotated[ZoneInfo, Depends(get_timezone)]


def get_driver(request: Request) -> WorkerDriver:
    """This api-server worker's replay driver (started on the worker's first request)."""
    driver: WorkerDriver = request.app.state.jobs
    return driver


DriverDep = Annotated[WorkerDriver, Depends(get_driver)]


def get_job_store(store: StoreDep) -> JobStore:
    return JobStore(store)


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


def replay_engine(request: Request | None, store: DeadLetterStore) -> ReplayEngine:
    """The replay engine on the store; with Airflow's API as the user when ``request`` is given."""
    try:
        return ReplayEngine(store, api_for(request) if request is not None else None)
    except ValueError as exc:
        raise HTTPException(status.HTTP_500_INTERNAL_SERVER_ERROR, str(exc)) from None


# -- letters: what a request may see and touch --------------------------------------------------


class Letters:
    """The letters of a request: reads through :class:`LetterViews`, checked against the user's access."""

    def __init__(self, request: Request, store: StoreDep, tz: TimeZoneDep) -> None:
        self.request = request
        self.store = store
        self.tz = tz

    def views(self) -> LetterViews:
        return LetterViews(self.store)

    def readable(self, access: Access, q: LetterViews | None = None) -> set[str]:
        """The DAGs with letters whose task instances the user may read."""
        return access.permitted((q or self.views()).dag_ids(), "GET")

    def letter_for(self, letter_id: int, access: Access) -> Letter:
        """One letter, if the user may read its DAG; 404 if none, and the same 404 if they may not
        (the answer must not tell that a letter exists in a DAG they cannot see)."""
        letter = self.store.get(letter_id)
        if letter is None or not access.permitted([letter.dag_id], "GET"):
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no letter {letter_id}")
        return letter

    def select(self, access: Access, body: SelectionBody, event: str | None = None) -> list[Letter]:
        """The letters an action takes, refused (403) unless the user may edit every DAG among them.

        :param event: the action's Audit Log event: a refusal is audited under it (outcome ``refused``).
        """
        if body.all_matching:
            where = body.filter.to_letter_filter(self.tz)
            letters = self.views().letters(where, self.readable(access), DEFAULT_SELECTION_LIMIT)
        else:
            if not body.ids:
                raise HTTPException(status.HTTP_400_BAD_REQUEST, "select at least one letter")
            ids = sorted(set(body.ids))[:DEFAULT_SELECTION_LIMIT]
            found = self.store.list(LetterFilter(ids=ids), limit=len(ids))
            readable = access.permitted({letter.dag_id for letter in found}, "GET")
            letters = [letter for letter in found if letter.dag_id in readable]  # others: as if missing
        if not letters:
            raise HTTPException(status.HTTP_404_NOT_FOUND, "no letter matches the selection")
        try:
            access.require({letter.dag_id for letter in letters}, "PUT")
        except HTTPException:
            if event:
                audit(access.actor, event, letters, outcome="refused", reason=getattr(body, "reason", ""))
            raise
        return letters

    def tries(self, dag_id: str, run_id: str, task_id: str, map_index: int) -> tuple[list[Try], str | None]:
        """The task instance's tries as Airflow's REST API reports them, or why they could not be read."""
        try:
            with api_for(self.request) as api:
                return task_instance_tries(api, dag_id, run_id, task_id, map_index), None
        except AirflowApiError as exc:
            return [], redact(str(exc))[:300]

    def ti_history(self, dag_id: str, run_id: str, task_id: str, map_index: int) -> dict[str, Any]:
        """A task instance's letter, its replays and its tries."""
        letter = self.views().letter_of_ti(dag_id, run_id, task_id, map_index)
        tries, tries_error = self.tries(dag_id, run_id, task_id, map_index)
        return {
            "dag_id": dag_id,
            "run_id": run_id,
            "task_id": task_id,
            "map_index": map_index,
            "letter": letter,
            "replays": self.store.replays(letter.id) if letter else [],
            "tries": tries,
            "tries_error": tries_error,
        }


LettersDep = Annotated[Letters, Depends()]


def selected(model: type[SelectionBody], event: str) -> Callable[..., tuple[list[Letter], Any]]:
    """A dependency reading a ``model`` body and selecting its letters (see :meth:`Letters.select`);
    a refusal is audited as ``event``."""

    def dependency(body: model, access: AccessDep, letters: LettersDep) -> tuple[list[Letter], Any]:  # type: ignore[valid-type]
        return letters.select(access, body, event), body

    return dependency
