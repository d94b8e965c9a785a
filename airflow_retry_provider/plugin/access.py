"""Who is asking and what they may do: Airflow's auth manager, the signed-in user's token and
Airflow's API as that user, and Airflow's Audit Log for what they did.

No ``from __future__ import annotations`` here: FastAPI reads the annotations at runtime.
"""

import json
from collections import defaultdict
from collections.abc import Iterable
from typing import Annotated, Any, Literal

from airflow.api_fastapi.core_api.security import GetUserDep
from fastapi import Depends, HTTPException, Request, status

from airflow_retry_provider.dlq import Actor, Letter
from airflow_retry_provider.hooks.airflow_api import AirflowApi, ApiCredentials
from airflow_retry_provider.plugin import URL_PREFIX
from airflow_retry_provider.policy import redact

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

    def require_pool(self, name: str | None, method: Literal["GET", "PUT"]) -> None:
        """403 unless the user may read (GET) or edit (PUT) pool ``name`` (a dependency is its pool; None: pools)."""
        from airflow.api_fastapi.auth.managers.models.resource_details import PoolDetails

        details = PoolDetails(name=name) if name else None
        if not self.manager.is_authorized_pool(method=method, user=self.user, details=details):
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


def audit_action(actor: str, event: str, **details: Any) -> None:
    """Airflow's Audit Log: one row for an action on no DAG (a dependency's breaker), ``details`` redacted."""
    from airflow.models.log import Log
    from airflow.utils.session import create_session

    extra = {k: redact(v) if isinstance(v, str) else v for k, v in details.items()}
    with create_session() as session:
        session.add(Log(event=event, owner=actor, owner_display_name=actor, extra=json.dumps(extra)))


def access_dep(user: GetUserDep) -> Access:
    """The signed-in user (401 without a valid token) and Airflow's auth manager."""
    from airflow.api_fastapi.app import get_auth_manager

    return Access(user, get_auth_manager())


AccessDep = Annotated[Access, Depends(access_dep)]
