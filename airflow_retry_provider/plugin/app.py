"""The dead-letter pages and their JSON API: a FastAPI app that the plugin mounts on Airflow's api-server.

Every route sits behind Airflow's own authentication (``GetUserDep``: the bearer token or the UI's
``_token`` cookie) and authorization (the auth manager's ``is_authorized_dag`` on the task
instances of each letter's DAG). Lists and counts only ever include DAGs the user may read;
replay, park and dismiss need edit access to every DAG they touch, take the acting user from
Airflow's auth, accept POST with a JSON body only, and land in Airflow's Audit Log
(``action_logging``) and in ``retry_replays``.

No ``from __future__ import annotations`` here: FastAPI reads the annotations at runtime.
"""

import csv
import io
import json
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import quote, urlencode
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import jinja2
from fastapi import Depends, FastAPI, HTTPException, Query, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from fastapi.templating import Jinja2Templates
from markupsafe import Markup
from pydantic import BaseModel, Field

from airflow_retry_provider.dlq.airflow_api import AirflowApi, AirflowApiError, ApiCredentials
from airflow_retry_provider.dlq.models import STATUSES, Letter
from airflow_retry_provider.dlq.replay import (
    DEFAULT_SELECTION_LIMIT,
    ReplayEngine,
    ReplayRequest,
    ReplayResult,
)
from airflow_retry_provider.dlq.store import DeadLetterStore, LetterFilter
from airflow_retry_provider.plugin.queries import LetterViews, Try, task_instance_tries
from airflow_retry_provider.policy import redact

URL_PREFIX = "/retry-provider"
TIMEZONE_ENV = "AIRFLOW_RETRY_UI_TIMEZONE"
DEFAULT_TIMEZONE = "America/Sao_Paulo"
PAGE_SIZE = 50
GROUP_PAGE_SIZE = 50
COUNT_CAP = 10_000
FAILURE_CLASSES = ("poison", "retryable", "unknown")
TEMPLATES = Path(__file__).parent / "templates"

ApiFactory = Callable[[Request, str], AirflowApi]


def ui_timezone(environ: Mapping[str, str]) -> ZoneInfo:
    """``AIRFLOW_RETRY_UI_TIMEZONE`` (default America/Sao_Paulo); an unknown zone is a clear error."""
    name = environ.get(TIMEZONE_ENV) or DEFAULT_TIMEZONE
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"{TIMEZONE_ENV} must be an IANA time zone such as America/Sao_Paulo, got {name!r}"
        ) from None


# -- Airflow: auth, URLs, the REST API as the signed-in user ------------------------------------


def acting_user_api(base_url: str, token: str, timeout: float = 30.0) -> AirflowApi:
    """Airflow's REST API called with the signed-in user's own token, so Airflow checks their rights again.

    :param base_url: where Airflow's API is (``[api] base_url`` or this request's origin).
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


def airflow_base_url(request: Request) -> str:
    """Airflow's API base URL: ``[api] base_url`` when set, else this request's origin."""
    from airflow.configuration import conf

    configured = conf.get("api", "base_url", fallback=None)
    if configured:
        return str(configured).rstrip("/")
    return f"{request.url.scheme}://{request.url.netloc}{airflow_root(request)}"


def default_api(request: Request, token: str) -> AirflowApi:
    return acting_user_api(airflow_base_url(request), token)


def _team_names(dag_ids: list[str]) -> dict[str, str | None]:
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

    def permitted(self, dag_ids: Iterable[str], method: Literal["GET", "PUT"]) -> set[str]:
        """The subset of ``dag_ids`` whose task instances the user may read (GET) or edit (PUT)."""
        from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity, DagDetails

        todo = sorted({d for d in dag_ids if (method, d) not in self._cache})
        teams = _team_names(todo)
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


# -- request models -------------------------------------------------------------------------------


class Filters(BaseModel):
    """Which letters: every empty field means "any". Dates are days in the UI's time zone, or ISO instants."""

    dag_id: str | None = None
    task_id: str | None = None
    category: str | None = None
    failure_class: str | None = None
    status: str | None = None
    workspace_id: str | None = None
    fingerprint: str | None = None
    since: str | None = Field(default=None, description="from this day (inclusive) or instant")
    until: str | None = Field(default=None, description="to this day (inclusive) or before this instant")

    def cleaned(self) -> dict[str, str]:
        return {k: v.strip() for k, v in self.model_dump().items() if isinstance(v, str) and v.strip()}

    def to_letter_filter(self, tz: ZoneInfo) -> LetterFilter:
        values = self.cleaned()
        try:
            since = _instant(values.pop("since", None), tz, end=False)
            until = _instant(values.pop("until", None), tz, end=True)
        except ValueError as exc:
            raise HTTPException(status.HTTP_400_BAD_REQUEST, f"bad date: {exc}") from None
        return LetterFilter(
            dag_id=values.get("dag_id"),
            task_id=values.get("task_id"),
            category=values.get("category"),
            failure_class=values.get("failure_class"),
            status=values.get("status"),
            fingerprint=values.get("fingerprint"),
            workspace_id=values.get("workspace_id"),
            since=since,
            until=until,
        )


def filters_from_query(
    dag_id: str | None = None,
    task_id: str | None = None,
    category: str | None = None,
    failure_class: str | None = None,
    status: str | None = None,
    workspace_id: str | None = None,
    fingerprint: str | None = None,
    since: Annotated[str | None, Query(description="from this day (inclusive) or instant")] = None,
    until: Annotated[str | None, Query(description="to this day (inclusive) or before this instant")] = None,
) -> Filters:
    """The filters from the query string (each field is its own parameter)."""
    return Filters(
        dag_id=dag_id,
        task_id=task_id,
        category=category,
        failure_class=failure_class,
        status=status,
        workspace_id=workspace_id,
        fingerprint=fingerprint,
        since=since,
        until=until,
    )


QueryFilters = Annotated[Filters, Depends(filters_from_query)]


def _instant(value: str | None, tz: ZoneInfo, end: bool) -> datetime | None:
    """A day (the start of it, or of the next one for ``end``) in ``tz``, or an ISO instant."""
    if not value:
        return None
    if len(value) == 10:
        day = date.fromisoformat(value) + (timedelta(days=1) if end else timedelta())
        return datetime.combine(day, time(), tzinfo=tz)
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=tz)


class SelectionBody(BaseModel):
    """Which letters an action takes: the listed ``ids``, or with ``all_matching`` every letter of ``filter``."""

    ids: list[int] = Field(default_factory=list)
    all_matching: bool = False
    filter: Filters = Field(default_factory=Filters)


class ReplayBody(SelectionBody):
    reason: str = Field(min_length=1, description="why the letters should run again")
    fix_version: str = Field(min_length=1, description="the code or data version that fixes the cause")
    processing_version: str | None = Field(default=None, description="ask for a new work-unit identity")


class ParkBody(SelectionBody):
    reason: str = ""


class DismissBody(SelectionBody):
    reason: str = Field(min_length=1, description="why the letters are closed without a replay")


# -- replay jobs ----------------------------------------------------------------------------------


@dataclass
class ReplayJob:
    """A replay running in the api-server, paced by the engine; the page polls its progress."""

    id: str
    actor: str
    dag_ids: frozenset[str]
    letter_ids: list[int]
    reason: str
    fix_version: str
    started_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    done: int = 0
    results: list[ReplayResult] = field(default_factory=list)
    finished_at: datetime | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for result in self.results:
            counts[result.outcome] = counts.get(result.outcome, 0) + 1
        return {
            "id": self.id,
            "actor": self.actor,
            "total": len(self.letter_ids),
            "done": self.done,
            "finished": self.finished_at is not None,
            "counts": counts,
            "results": [r.to_json() for r in self.results],
            "error": self.error,
            "reason": self.reason,
            "fix_version": self.fix_version,
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
        }


class ReplayJobs:
    """The replays this api-server process runs (their outcomes are also in ``retry_replays``)."""

    def __init__(self, keep: int = 200) -> None:
        self._jobs: dict[str, ReplayJob] = {}
        self._lock = threading.Lock()
        self._keep = keep

    def start(self, job: ReplayJob, engine: ReplayEngine, request: ReplayRequest) -> None:
        with self._lock:
            self._jobs[job.id] = job
            while len(self._jobs) > self._keep:
                self._jobs.pop(next(iter(self._jobs)))

        def progress(result: ReplayResult, done: int, total: int) -> None:
            with self._lock:
                job.results.append(result)
                job.done = done

        def run() -> None:
            try:
                engine.replay(request, ids=job.letter_ids, progress=progress)
            except Exception as exc:  # shown on the progress page; the letters keep their state
                job.error = redact(f"{type(exc).__name__}: {exc}")
            finally:
                job.finished_at = datetime.now(timezone.utc)
                if engine.api is not None:
                    engine.api.close()

        threading.Thread(target=run, name=f"retry-provider-replay-{job.id}", daemon=True).start()

    def get(self, job_id: str) -> ReplayJob | None:
        with self._lock:
            return self._jobs.get(job_id)


# -- rendering ------------------------------------------------------------------------------------


def _templates(tz: ZoneInfo) -> Jinja2Templates:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,  # every value is HTML-escaped: an error message with <script> shows as text
        undefined=jinja2.StrictUndefined,
    )

    def localtime(value: datetime | None) -> Markup:
        if value is None:
            return Markup("&ndash;")
        utc = value.astimezone(timezone.utc)
        local = value.astimezone(tz)
        return Markup('<time datetime="{}" title="{} UTC">{}</time>').format(
            utc.isoformat(), utc.strftime("%Y-%m-%dT%H:%M:%SZ"), local.strftime("%Y-%m-%d %H:%M:%S")
        )

    env.filters["localtime"] = localtime
    env.filters["redact"] = lambda text: redact(str(text)) if text is not None else ""
    env.globals["tz_name"] = tz.key
    return Jinja2Templates(env=env)


def _query(values: Mapping[str, Any]) -> str:
    return urlencode([(k, v) for k, v in values.items() if v not in (None, "")], doseq=True)


def ti_links(root: str, letter: Letter) -> dict[str, str]:
    """Airflow UI links of a letter's task instance and of the log of its failed try."""
    path = (
        f"{root}/dags/{quote(letter.dag_id, safe='')}/runs/{quote(letter.run_id, safe='')}"
        f"/tasks/{quote(letter.task_id, safe='')}"
    )
    if letter.map_index != -1:
        path += f"/mapped/{letter.map_index}"
    return {"ti": path, "log": f"{path}?try_number={letter.try_number}", "run": path.split("/tasks/")[0]}


def _csv(letters: Iterator[Letter]) -> Iterator[str]:
    names = list(Letter.__dataclass_fields__)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(names)
    for n, letter in enumerate(letters, start=1):
        row = letter.to_json()
        writer.writerow(["" if row[k] is None else row[k] for k in names])
        if n % 500 == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def _json_lines(letters: Iterator[Letter]) -> Iterator[str]:
    yield "["
    for n, letter in enumerate(letters):
        yield ("," if n else "") + "\n" + json.dumps(letter.to_json())
    yield "\n]\n"


# -- the app --------------------------------------------------------------------------------------


def create_app(
    store: DeadLetterStore | None = None,
    api_factory: ApiFactory | None = None,
    url_prefix: str = URL_PREFIX,
) -> FastAPI:
    """The dead-letter pages and JSON API.

    :param store: the dead-letter store; by default built on first use from the Airflow connection
        ``retry_provider_default``.
    :param api_factory: builds Airflow's REST API client for a request and the user's token; by
        default :func:`acting_user_api` on ``[api] base_url`` (or the request's origin).
    :param url_prefix: where the plugin mounts this app (to link back to Airflow's own pages).
    """
    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
    from airflow.api_fastapi.core_api.security import GetUserDep, requires_access_dag
    from airflow.api_fastapi.logging.decorators import action_logging

    from airflow_retry_provider.plugin.reconciliation_pages import register as register_reconciliation

    tz = ui_timezone(os.environ)
    templates = _templates(tz)
    jobs = ReplayJobs()
    make_api = api_factory or default_api
    app = FastAPI(
        title="Dead letters (airflow-retry-provider)",
        description=(
            "Review, group, preview and replay the dead-letter queue. Authenticate as for Airflow's "
            "REST API: `Authorization: Bearer <token from POST /auth/token>` (or the UI's session)."
        ),
        version="1",
    )
    app.state.url_prefix = url_prefix
    app.state.store = store
    lock = threading.Lock()
    register_reconciliation(app)  # "Medallion gaps" and "Connector health", same auth and store

    def get_store() -> DeadLetterStore:
        if app.state.store is None:
            with lock:
                if app.state.store is None:
                    app.state.store = DeadLetterStore.from_conn_id()
        found: DeadLetterStore = app.state.store
        return found

    def access_dep(user: GetUserDep) -> Access:
        from airflow.api_fastapi.app import get_auth_manager

        return Access(user, get_auth_manager())

    AccessDep = Annotated[Access, Depends(access_dep)]

    def views() -> LetterViews:
        return LetterViews(get_store())

    def readable(access: Access, q: LetterViews | None = None) -> set[str]:
        return access.permitted((q or views()).dag_ids(), "GET")

    def api_for(request: Request) -> AirflowApi:
        token = request_token(request)
        if not token:
            raise HTTPException(status.HTTP_401_UNAUTHORIZED, "Not authenticated")
        return make_api(request, token)

    def engine_for(request: Request | None) -> ReplayEngine:
        try:
            return ReplayEngine(get_store(), api_for(request) if request is not None else None)
        except ValueError as exc:
            raise HTTPException(status.HTTP_500_INTERNAL_SERVER_ERROR, str(exc)) from None

    def letter_for(letter_id: int, access: Access) -> Letter:
        letter = get_store().get(letter_id)
        if letter is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no letter {letter_id}")
        access.require([letter.dag_id], "GET")
        return letter

    def select(access: Access, body: SelectionBody) -> list[Letter]:
        """The letters an action takes, refused (403) unless the user may edit every DAG among them."""
        if body.all_matching:
            where = body.filter.to_letter_filter(tz)
            letters = views().letters(where, readable(access), DEFAULT_SELECTION_LIMIT)
        else:
            if not body.ids:
                raise HTTPException(status.HTTP_400_BAD_REQUEST, "select at least one letter")
            ids = sorted(set(body.ids))[:DEFAULT_SELECTION_LIMIT]
            letters = get_store().list(LetterFilter(ids=ids), limit=len(ids))
            access.require({letter.dag_id for letter in letters}, "GET")
        if not letters:
            raise HTTPException(status.HTTP_404_NOT_FOUND, "no letter matches the selection")
        access.require({letter.dag_id for letter in letters}, "PUT")
        return letters

    def selected(model: type[SelectionBody]) -> Callable[..., tuple[list[Letter], Any]]:
        def dependency(body: model, access: AccessDep) -> tuple[list[Letter], Any]:  # type: ignore[valid-type]
            return select(access, body), body

        return dependency

    replay_selection = selected(ReplayBody)
    park_selection = selected(ParkBody)
    dismiss_selection = selected(DismissBody)

    def page(request: Request, name: str, access: Access | None, status_code: int = 200, **context: Any):
        root = airflow_root(request)
        context.update(
            base=str(request.scope.get("root_path", "")),
            airflow=root,
            user=access.actor if access else None,
        )
        return templates.TemplateResponse(request, name, context, status_code=status_code)

    @app.exception_handler(HTTPException)
    async def html_errors(request: Request, exc: HTTPException) -> Response:
        """Pages answer errors with a page (and a link to sign in on 401); the API answers JSON."""
        wants_page = "/api/" not in request.url.path and "text/html" in request.headers.get("accept", "")
        if not wants_page:
            return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)
        login = f"{airflow_root(request)}/auth/login?next={quote(str(request.url), safe='')}"
        return page(
            request, "error.html", None, exc.status_code, code=exc.status_code, detail=exc.detail, login=login
        )

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> Response:
        errors = [{"loc": list(e.get("loc", ())), "msg": str(e.get("msg", ""))} for e in exc.errors()]
        return JSONResponse({"detail": errors}, status_code=status.HTTP_422_UNPROCESSABLE_CONTENT)

    # -- pages ------------------------------------------------------------------------------------

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def letters_page(
        request: Request,
        access: AccessDep,
        filters: QueryFilters,
        view: Literal["list", "groups"] = "list",
        before_created: datetime | None = None,
        before_id: int | None = None,
        after_letters: int | None = None,
        after_fingerprint: str | None = None,
    ):
        """The queue: filters, the list (newest first) or the groups by fingerprint, and the actions."""
        where = filters.to_letter_filter(tz)
        with views().reading() as q:
            dags = readable(access, q)
            context: dict[str, Any] = {
                "filters": filters.cleaned(),
                "filter_query": _query(filters.cleaned()),
                "view": view,
                "dag_ids": sorted(dags),
                "statuses": STATUSES,
                "failure_classes": FAILURE_CLASSES,
                "can_edit": bool(access.permitted(dags, "PUT")),
                "letters": [],
                "groups": None,
                "next_query": None,
                "count": 0,
                "count_cap": COUNT_CAP,
            }
            if view == "groups":
                after = (after_letters, after_fingerprint or "") if after_letters is not None else None
                groups = q.groups(where, dags, GROUP_PAGE_SIZE, after)
                context["groups"] = groups
                if groups.after:
                    context["next_query"] = _query(
                        {
                            **filters.cleaned(),
                            "view": "groups",
                            "after_letters": groups.after[0],
                            "after_fingerprint": groups.after[1],
                        }
                    )
            else:
                before = (before_created, before_id) if before_created and before_id is not None else None
                letters = q.letters(where, dags, PAGE_SIZE, before)
                context["letters"] = letters
                context["count"] = q.count(where, dags, COUNT_CAP + 1)
                if len(letters) == PAGE_SIZE:
                    last = letters[-1]
                    context["next_query"] = _query(
                        {
                            **filters.cleaned(),
                            "before_created": last.created_at.isoformat(),
                            "before_id": last.id,
                        }
                    )
        return page(request, "letters.html", access, **context)

    @app.get("/letters/{letter_id}", response_class=HTMLResponse, include_in_schema=False)
    def letter_page(request: Request, letter_id: int, access: AccessDep):
        """One letter: identity, links into Airflow, error, classification, timeline, replays, actions."""
        letter = letter_for(letter_id, access)
        tries, tries_error = _tries(request, letter.dag_id, letter.run_id, letter.task_id, letter.map_index)
        return page(
            request,
            "detail.html",
            access,
            letter=letter,
            replays=get_store().replays(letter.id),
            links=ti_links(airflow_root(request), letter),
            tries=tries,
            tries_error=tries_error,
            can_edit=bool(access.permitted([letter.dag_id], "PUT")),
        )

    @app.get("/preview", response_class=HTMLResponse, include_in_schema=False)
    def preview_page(
        request: Request,
        access: AccessDep,
        filters: QueryFilters,
        ids: Annotated[list[int], Query()] = [],  # noqa: B006 (FastAPI copies defaults)
        all_matching: bool = False,
    ):
        """What a replay of the selection would do (Airflow's clear dry-run): nothing changes here."""
        letters = select(access, SelectionBody(ids=ids, all_matching=all_matching, filter=filters))
        engine = engine_for(request)
        try:
            preview = engine.preview(ids=[letter.id for letter in letters])
        finally:
            if engine.api is not None:
                engine.api.close()
        return page(
            request,
            "preview.html",
            access,
            preview=preview,
            minutes=preview.seconds / 60,
            ready_ids=[item.letter.id for item in preview.items if item.error is None],
            back_query=_query(filters.cleaned()),
        )

    @app.get("/jobs/{job_id}", response_class=HTMLResponse, include_in_schema=False)
    def job_page(request: Request, job_id: str, access: AccessDep):
        """The progress of a replay started from the preview page."""
        job = _job(job_id, access)
        return page(request, "job.html", access, job=job.to_json())

    @app.get(
        "/ti",
        response_class=HTMLResponse,
        include_in_schema=False,
        dependencies=[
            Depends(requires_access_dag(method="GET", access_entity=DagAccessEntity.TASK_INSTANCE))
        ],
    )
    def task_instance_page(
        request: Request, access: AccessDep, dag_id: str, run_id: str, task_id: str, map_index: str = "-1"
    ):
        """The task-instance tab: that instance's letter, its replays and its tries in Airflow."""
        history = _ti_history(request, dag_id, run_id, task_id, _map_index(map_index))
        letter = history["letter"]
        return page(
            request,
            "ti.html",
            access,
            links=ti_links(airflow_root(request), letter) if letter else None,
            **history,
        )

    # -- JSON API ---------------------------------------------------------------------------------

    @app.get("/api/letters", tags=["letters"])
    def list_letters(
        access: AccessDep,
        filters: QueryFilters,
        limit: Annotated[int, Query(ge=1, le=500)] = PAGE_SIZE,
        before_created: datetime | None = None,
        before_id: int | None = None,
    ) -> dict[str, Any]:
        """Letters of the DAGs you may read, newest first; pass ``next`` back for the following page."""
        where = filters.to_letter_filter(tz)
        before = (before_created, before_id) if before_created and before_id is not None else None
        with views().reading() as q:
            dags = readable(access, q)
            letters = q.letters(where, dags, limit, before)
            count = q.count(where, dags, COUNT_CAP + 1)
        following = (
            {"before_created": letters[-1].created_at.isoformat(), "before_id": letters[-1].id}
            if len(letters) == limit
            else None
        )
        return {
            "letters": [letter.to_json() for letter in letters],
            "count": min(count, COUNT_CAP),
            "count_is_capped": count > COUNT_CAP,
            "next": following,
        }

    @app.get("/api/groups", tags=["letters"])
    def list_groups(
        access: AccessDep,
        filters: QueryFilters,
        limit: Annotated[int, Query(ge=1, le=500)] = GROUP_PAGE_SIZE,
        after_letters: int | None = None,
        after_fingerprint: str | None = None,
    ) -> dict[str, Any]:
        """Letters grouped by fingerprint (one root cause each), biggest group first."""
        after = (after_letters, after_fingerprint or "") if after_letters is not None else None
        with views().reading() as q:
            groups = q.groups(filters.to_letter_filter(tz), readable(access, q), limit, after)
        return {
            "groups": [g.to_json() for g in groups.groups],
            "total_groups": groups.total_groups,
            "total_letters": groups.total_letters,
            "next": {"after_letters": groups.after[0], "after_fingerprint": groups.after[1]}
            if groups.after
            else None,
        }

    @app.get("/api/letters/{letter_id}", tags=["letters"])
    def get_letter(letter_id: int, access: AccessDep) -> dict[str, Any]:
        """One letter and its replay history."""
        letter = letter_for(letter_id, access)
        return {"letter": letter.to_json(), "replays": [r.to_json() for r in get_store().replays(letter.id)]}

    @app.get("/api/export.csv", tags=["export"], response_class=StreamingResponse)
    def export_csv(access: AccessDep, filters: QueryFilters) -> StreamingResponse:
        """Every letter matching the filter (of the DAGs you may read) as CSV."""
        letters = views().export(filters.to_letter_filter(tz), readable(access))
        return StreamingResponse(
            _csv(letters),
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": 'attachment; filename="dead-letters.csv"'},
        )

    @app.get("/api/export.json", tags=["export"], response_class=StreamingResponse)
    def export_json(access: AccessDep, filters: QueryFilters) -> StreamingResponse:
        """Every letter matching the filter (of the DAGs you may read) as a JSON array."""
        letters = views().export(filters.to_letter_filter(tz), readable(access))
        return StreamingResponse(
            _json_lines(letters),
            media_type="application/json",
            headers={"Content-Disposition": 'attachment; filename="dead-letters.json"'},
        )

    @app.post("/api/preview", tags=["actions"])
    def preview(request: Request, access: AccessDep, body: SelectionBody) -> dict[str, Any]:
        """Exactly what a replay of the selection would touch, its count and its pace. Changes nothing."""
        letters = select(access, body)
        engine = engine_for(request)
        try:
            return engine.preview(ids=[letter.id for letter in letters]).to_json()
        finally:
            if engine.api is not None:
                engine.api.close()

    @app.post(
        "/api/replays",
        tags=["actions"],
        status_code=status.HTTP_202_ACCEPTED,
        dependencies=[Depends(replay_selection), Depends(action_logging(event="retry_provider_replay"))],
    )
    def replay(
        request: Request,
        access: AccessDep,
        selection: Annotated[tuple[list[Letter], ReplayBody], Depends(replay_selection)],
    ) -> dict[str, Any]:
        """Replay the selection at the configured pace, as you; poll ``/api/jobs/{id}`` for progress."""
        letters, body = selection
        try:
            ask = ReplayRequest(access.actor, body.reason, body.fix_version, body.processing_version or None)
        except ValueError as exc:
            raise HTTPException(status.HTTP_400_BAD_REQUEST, str(exc)) from None
        job = ReplayJob(
            id=uuid.uuid4().hex,
            actor=access.actor,
            dag_ids=frozenset(letter.dag_id for letter in letters),
            letter_ids=[letter.id for letter in letters],
            reason=ask.reason,
            fix_version=ask.fix_version,
        )
        jobs.start(job, engine_for(request), ask)
        return {**job.to_json(), "url": f"{request.scope.get('root_path', '')}/jobs/{job.id}"}

    @app.get("/api/jobs/{job_id}", tags=["actions"])
    def get_job(job_id: str, access: AccessDep) -> dict[str, Any]:
        """Progress of a replay started by ``POST /api/replays``."""
        return _job(job_id, access).to_json()

    @app.post(
        "/api/park",
        tags=["actions"],
        dependencies=[Depends(park_selection), Depends(action_logging(event="retry_provider_park"))],
    )
    def park(
        access: AccessDep,
        selection: Annotated[tuple[list[Letter], ParkBody], Depends(park_selection)],
    ) -> dict[str, Any]:
        """``dlq`` -> ``parked``: kept for inspection, replays refused."""
        letters, body = selection
        ids = [letter.id for letter in letters]
        changed = engine_for(None).park(ids, access.actor, body.reason)
        return {"changed": changed, "unchanged": [i for i in ids if i not in changed]}

    @app.post(
        "/api/dismiss",
        tags=["actions"],
        dependencies=[Depends(dismiss_selection), Depends(action_logging(event="retry_provider_dismiss"))],
    )
    def dismiss(
        access: AccessDep,
        selection: Annotated[tuple[list[Letter], DismissBody], Depends(dismiss_selection)],
    ) -> dict[str, Any]:
        """``dlq`` or ``parked`` -> ``dismissed``: closed without a replay, with a reason."""
        letters, body = selection
        ids = [letter.id for letter in letters]
        try:
            changed = engine_for(None).dismiss(ids, access.actor, body.reason)
        except ValueError as exc:
            raise HTTPException(status.HTTP_400_BAD_REQUEST, str(exc)) from None
        return {"changed": changed, "unchanged": [i for i in ids if i not in changed]}

    @app.get(
        "/api/task-instance",
        tags=["letters"],
        dependencies=[
            Depends(requires_access_dag(method="GET", access_entity=DagAccessEntity.TASK_INSTANCE))
        ],
    )
    def task_instance(
        request: Request, access: AccessDep, dag_id: str, run_id: str, task_id: str, map_index: int = -1
    ) -> dict[str, Any]:
        """A task instance's letter, its replays, and its tries as Airflow's REST API reports them."""
        history = _ti_history(request, dag_id, run_id, task_id, map_index)
        letter = history["letter"]
        return {
            "letter": letter.to_json() if letter else None,
            "replays": [r.to_json() for r in history["replays"]],
            "tries": [t.to_json() for t in history["tries"]],
            "tries_error": history["tries_error"],
        }

    # -- helpers that need the closure ------------------------------------------------------------

    def _job(job_id: str, access: Access) -> ReplayJob:
        job = jobs.get(job_id)
        if job is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, "no such replay in this api-server process")
        access.require(job.dag_ids, "GET")
        return job

    def _tries(
        request: Request, dag_id: str, run_id: str, task_id: str, map_index: int
    ) -> tuple[list[Try], str | None]:
        try:
            with api_for(request) as api:
                return task_instance_tries(api, dag_id, run_id, task_id, map_index), None
        except AirflowApiError as exc:
            return [], redact(str(exc))[:300]

    def _ti_history(
        request: Request, dag_id: str, run_id: str, task_id: str, map_index: int
    ) -> dict[str, Any]:
        letter = views().letter_of_ti(dag_id, run_id, task_id, map_index)
        tries, tries_error = _tries(request, dag_id, run_id, task_id, map_index)
        return {
            "dag_id": dag_id,
            "run_id": run_id,
            "task_id": task_id,
            "map_index": map_index,
            "letter": letter,
            "replays": get_store().replays(letter.id) if letter else [],
            "tries": tries,
            "tries_error": tries_error,
        }

    return app


def _map_index(value: str) -> int:
    """The tab's ``{MAP_INDEX}``: Airflow leaves the placeholder as is for an unmapped instance."""
    try:
        return int(value)
    except ValueError:
        return -1
