"""A thin client for the parts of Airflow's public REST API the replay engine and the sweeper use.

It gets a token with ``POST /auth/token`` (username and password), keeps it in memory, and asks
for a new one once on a 401. Neither the password nor the token is ever logged or shown in an
error message. Build it from the documented Airflow connection ``retry_provider_airflow_api``
(``AIRFLOW_CONN_RETRY_PROVIDER_AIRFLOW_API=http://admin:admin@127.0.0.1:8080``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from airflow_retry_provider.airflow_compat import keeps_task_state
from airflow_retry_provider.policy.redact import redact

log = logging.getLogger(__name__)

API_CONN_ID = "retry_provider_airflow_api"
API_CONN_ENV = "AIRFLOW_CONN_RETRY_PROVIDER_AIRFLOW_API"
PAGE_SIZE = 100
FINISHED_RUN_STATES = frozenset({"success", "failed"})


class AirflowApiError(RuntimeError):
    """Airflow answered with an error (or not at all); the message never holds a credential.

    :param sent: False when the request surely never reached Airflow (no connection, no token);
        True when it may have: then only an HTTP status below 500 says Airflow did not act on it.
    """

    def __init__(self, message: str, status_code: int | None = None, sent: bool = True) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.sent = sent

    @property
    def outcome_unknown(self) -> bool:
        """Airflow may have done what was asked although the caller got no answer saying so."""
        return self.sent and (self.status_code is None or self.status_code >= 500)


@dataclass(frozen=True)
class TaskInstanceRef:
    """One task instance as Airflow reports it."""

    dag_id: str
    run_id: str
    task_id: str
    map_index: int
    state: str | None
    try_number: int
    max_tries: int = 0
    end_date: datetime | None = None
    note: str | None = None
    #: the DAG version the task instance ran (``dag_version`` in the API), None when Airflow no longer has it
    dag_version_id: str | None = None
    dag_version_number: int | None = None
    bundle_name: str | None = None
    bundle_version: str | None = None
    start_date: datetime | None = None

    @classmethod
    def from_json(cls, item: Mapping[str, Any]) -> TaskInstanceRef:
        version = item.get("dag_version") or {}
        number = version.get("version_number")
        return cls(
            dag_id=str(item["dag_id"]),
            run_id=str(item["dag_run_id"]),
            task_id=str(item["task_id"]),
            map_index=int(item.get("map_index", -1)),
            state=item.get("state"),
            try_number=int(item.get("try_number") or 0),
            max_tries=int(item.get("max_tries") or 0),
            end_date=parse_time(item.get("end_date")),
            note=item.get("note"),
            dag_version_id=str(version["id"]) if version.get("id") else None,
            dag_version_number=int(number) if isinstance(number, int) else None,
            bundle_name=version.get("bundle_name"),
            bundle_version=version.get("bundle_version"),
            start_date=parse_time(item.get("start_date")),
        )

    def version_fields(self) -> dict[str, Any]:
        """The DAG version fields of a letter filed for this task instance."""
        return {
            "dag_version_id": self.dag_version_id,
            "dag_version_number": self.dag_version_number,
            "bundle_name": self.bundle_name,
            "bundle_version": self.bundle_version,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "dag_id": self.dag_id,
            "run_id": self.run_id,
            "task_id": self.task_id,
            "map_index": self.map_index,
            "state": self.state,
            "try_number": self.try_number,
        }


@dataclass(frozen=True)
class DagVersion:
    """One version of a DAG as Airflow reports it (a new one each time a changed DAG is parsed)."""

    id: str
    dag_id: str
    version_number: int
    bundle_name: str | None
    bundle_version: str | None
    created_at: datetime | None

    @classmethod
    def from_json(cls, item: Mapping[str, Any]) -> DagVersion:
        return cls(
            id=str(item["id"]),
            dag_id=str(item["dag_id"]),
            version_number=int(item["version_number"]),
            bundle_name=item.get("bundle_name"),
            bundle_version=item.get("bundle_version"),
            created_at=parse_time(item.get("created_at")),
        )


def parse_time(value: Any) -> datetime | None:
    """An ISO 8601 timestamp from the API (``Z`` or an offset), or None."""
    if not value:
        return None
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


@dataclass(frozen=True)
class ApiCredentials:
    """Where Airflow's API is and who we are there. ``repr`` hides the password."""

    base_url: str
    username: str
    password: str

    def __repr__(self) -> str:
        return f"ApiCredentials(base_url={self.base_url!r}, username={self.username!r}, password='***')"

    @classmethod
    def from_uri(cls, uri: str) -> ApiCredentials:
        """``http://user:password@host:port[/path]`` (an Airflow connection URI of type http or https)."""
        parts = urlsplit(uri)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"{API_CONN_ID}: expected http(s)://user:password@host:port, got scheme {parts.scheme!r}"
            )
        netloc = parts.hostname + (f":{parts.port}" if parts.port else "")
        return cls(
            base_url=f"{parts.scheme}://{netloc}{parts.path.rstrip('/')}",
            username=unquote(parts.username or ""),
            password=unquote(parts.password or ""),
        )

    @classmethod
    def from_connection(cls, conn: Any) -> ApiCredentials:
        """From an Airflow ``Connection`` (``airflow.sdk.BaseHook.get_connection``)."""
        host = str(conn.host or "")
        if "://" in host:
            base = host.rstrip("/")
        else:
            scheme = "https" if (conn.conn_type or "").lower() == "https" else "http"
            base = f"{scheme}://{host}" + (f":{conn.port}" if conn.port else "")
            if conn.schema:
                base += "/" + str(conn.schema).strip("/")
        return cls(base_url=base, username=str(conn.login or ""), password=str(conn.password or ""))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ApiCredentials | None:
        """From ``AIRFLOW_CONN_RETRY_PROVIDER_AIRFLOW_API`` (None when it is not set)."""
        uri = (os.environ if environ is None else environ).get(API_CONN_ENV)
        return cls.from_uri(uri) if uri else None

    @classmethod
    def resolve(
        cls, url: str | None = None, user: str | None = None, password: str | None = None
    ) -> ApiCredentials:
        """Command-line flags first, then ``AIRFLOW_CONN_RETRY_PROVIDER_AIRFLOW_API``.

        A ``ValueError`` names the flag (or the variable) that is missing or malformed.
        """
        try:
            from_env = cls.from_env()
        except ValueError:
            raise ValueError(f"{API_CONN_ENV}: not an http(s)://user:password@host:port URI") from None
        if url:
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"--api-url: {url!r} is not an http(s):// URL")
            user = user or (from_env.username if from_env else None)
            if not user:
                raise ValueError("--api-user: missing (required with --api-url)")
            password = password or (from_env.password if from_env else None)
            return cls(url.rstrip("/"), user, password or "")
        if from_env is None:
            raise ValueError(f"--api-url: missing, and {API_CONN_ENV} is not set")
        return cls(from_env.base_url, user or from_env.username, password or from_env.password)


def credentials_from_airflow(conn_id: str = API_CONN_ID) -> ApiCredentials:
    """The API connection through Airflow (in a task: environment, secrets backend or metadata)."""
    from airflow.sdk import BaseHook

    return ApiCredentials.from_connection(BaseHook.get_connection(conn_id))


class AirflowApi:
    """Calls to ``/api/v2`` as one user.

    :param credentials: base URL, username, password.
    :param timeout: seconds per request (default ``[retry_provider] api_timeout_seconds``: a replay's lease is
        at least three of them).
    :param transport: an ``httpx`` transport (tests of the client itself may pass one).
    :param token: act with this bearer token (e.g. the signed-in user's) instead of logging in;
        when Airflow refuses it, the call fails rather than falling back to the credentials.
    """

    def __init__(
        self,
        credentials: ApiCredentials,
        timeout: float | None = None,
        transport: Any = None,
        token: str | None = None,
    ) -> None:
        import httpx

        self.credentials = credentials
        if timeout is None:
            from airflow_retry_provider import settings

            timeout = float(settings.api_timeout())
        self._client = httpx.Client(base_url=credentials.base_url, timeout=timeout, transport=transport)
        self._token: str | None = token
        self._fixed_token = token is not None
        self._version: str | None = None
        self.calls = 0
        """Requests sent to Airflow by this client (a sign-in included): what a round of work cost it."""

    def __repr__(self) -> str:
        return f"AirflowApi({self.credentials.base_url!r})"

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> AirflowApi:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def sign_in(self) -> None:
        """Get the token now, so an unreachable or refusing Airflow fails before any work starts."""
        if self._token is None:
            self._token = self._get_token()

    # -- transport ----------------------------------------------------------------------------

    def _get_token(self) -> str:
        import httpx

        if self._fixed_token:
            raise AirflowApiError("Airflow refused the given token (expired?): sign in again", 401)

        self.calls += 1
        try:
            response = self._client.post(
                "/auth/token",
                json={"username": self.credentials.username, "password": self.credentials.password},
            )
        except httpx.HTTPError as exc:
            raise AirflowApiError(
                f"Airflow API at {self.credentials.base_url} unreachable: {type(exc).__name__}", sent=False
            ) from None
        if response.status_code not in (200, 201):
            raise AirflowApiError(
                f"Airflow API refused a token for user {self.credentials.username!r}: "
                f"HTTP {response.status_code}",
                response.status_code,
                sent=False,
            )
        token = response.json().get("access_token")
        if not token:
            raise AirflowApiError("Airflow API answered POST /auth/token without an access_token")
        return str(token)

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """One call with the bearer token; the decoded JSON (None when empty)."""
        import httpx

        for attempt in (1, 2):
            if self._token is None:
                self._token = self._get_token()
            self.calls += 1
            try:
                response = self._client.request(
                    method, path, headers={"Authorization": f"Bearer {self._token}"}, **kwargs
                )
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:  # nothing reached Airflow
                raise AirflowApiError(f"{method} {path}: {type(exc).__name__}: {exc}", sent=False) from None
            except httpx.HTTPError as exc:
                raise AirflowApiError(f"{method} {path}: {type(exc).__name__}: {exc}") from None
            if response.status_code == 401 and attempt == 1:
                self._token = None  # expired: one fresh token, then give up
                continue
            if response.status_code >= 400:
                raise AirflowApiError(
                    f"{method} {path} -> HTTP {response.status_code}: {response.text[:500]}",
                    response.status_code,
                )
            return response.json() if response.content else None
        raise AirflowApiError(f"{method} {path}: unauthorised", 401)

    # -- the calls we need ------------------------------------------------------------------

    def clear_task_instance(
        self,
        dag_id: str,
        run_id: str,
        task_id: str,
        map_index: int = -1,
        *,
        dry_run: bool = True,
        note: str | None = None,
        downstream: bool = True,
        run_on_latest_version: bool | None = None,
        keep_task_state: bool = True,
    ) -> list[TaskInstanceRef]:
        """Clear one failed task instance and, with ``downstream``, the ones after it in its run that did not succeed.

        Only failed and upstream-failed instances are cleared (``only_failed``), so a task that
        already succeeded never runs again. A task instance that is running, queued or scheduled
        is not cleared (HTTP 409). Returns the instances Airflow reports (with ``dry_run``: would clear).

        ``keep_task_state`` (Airflow 3.4 and later; 3.3 refuses the field, so it is sent only to an
        Airflow that takes it): keep what the cleared tasks stored in Airflow's task state store, so
        the next try can reconnect to a remote job whose outcome is unknown (Airflow's default,
        false, wipes it and the task starts over). 3.3 has no such store to wipe.
        """
        marker: str | list[Any] = task_id if map_index == -1 else [task_id, map_index]
        body: dict[str, Any] = {
            "dry_run": dry_run,
            "dag_run_id": run_id,
            "task_ids": [marker],
            "only_failed": True,
            "reset_dag_runs": True,
            "include_upstream": False,
            "include_downstream": downstream,
            # a task instance still running (its failure callback may already have filed the
            # letter) is refused with 409 instead of being restarted behind the replay's back
            "prevent_running_task": True,
        }
        if note is not None:
            body["note"] = note[:1000]
        if run_on_latest_version is not None:  # absent: Airflow's DAG-level, then [core], default
            body["run_on_latest_version"] = run_on_latest_version
        try:
            version = self.airflow_version()
        except AirflowApiError as exc:  # the clear itself was never sent
            raise AirflowApiError(f"before clearing: {exc}", exc.status_code, sent=False) from None
        if keeps_task_state(version):
            body["keep_task_state"] = keep_task_state
        answer = self.request("POST", f"/api/v2/dags/{quote(dag_id, safe='')}/clearTaskInstances", json=body)
        cleared = [TaskInstanceRef.from_json(item) for item in (answer or {}).get("task_instances", [])]
        if cleared and not dry_run:
            self._queue_run_left_finished(dag_id, run_id)
        return cleared

    def _queue_run_left_finished(self, dag_id: str, run_id: str) -> None:
        """Queue the run again when the scheduler finished it while the clear was being committed.

        Airflow's clear queues a finished run, but reads the run's state without waiting for the
        scheduler's lock on it. When the scheduler is deciding that running run at that moment, it
        marks the run failed (or success) from the task states it read before the clear, and commits
        first; the clear then commits its task instances without a state, in a finished run that no
        scheduler looks at again: the replay would never run. So a run seen finished right after the
        clear's answer was left behind, and is queued as the clear meant (``PATCH`` state
        ``queued``: the scheduler starts it and runs what has no state). Never raises: the clear
        happened; when this look fails, the sync's replay timeout still ends the replay.
        """
        path = f"/api/v2/dags/{quote(dag_id, safe='')}/dagRuns/{quote(run_id, safe='')}"
        try:
            state = (self.request("GET", path) or {}).get("state")
            if state in FINISHED_RUN_STATES:
                self.request("PATCH", path, json={"state": "queued"})
                log.warning(
                    "airflow-retry-provider: the DAG run %s of %s was %s right after its clear "
                    "(the scheduler finished it while the clear was committed): queued it again",
                    run_id,
                    dag_id,
                    state,
                )
        except AirflowApiError as exc:
            log.warning(
                "airflow-retry-provider: could not check the run %s of %s after its clear: %s",
                run_id,
                dag_id,
                redact(str(exc))[:500],
            )

    def airflow_version(self) -> str:
        """The version of the Airflow answering (``GET /api/v2/version``), asked once per client."""
        if self._version is None:
            answer = self.request("GET", "/api/v2/version") or {}
            version = answer.get("version")
            try:
                keeps_task_state(str(version))
            except ValueError:
                raise AirflowApiError(
                    f"GET /api/v2/version answered no version: {str(answer)[:200]}"
                ) from None
            self._version = str(version)
        return self._version

    def task_instance(self, dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> TaskInstanceRef:
        """The current state and try number of one task instance."""
        path = (
            f"/api/v2/dags/{quote(dag_id, safe='')}/dagRuns/{quote(run_id, safe='')}"
            f"/taskInstances/{quote(task_id, safe='')}"
        )
        if map_index != -1:
            path += f"/{map_index}"
        return TaskInstanceRef.from_json(self.request("GET", path))

    def _ti_path(self, dag_id: str, run_id: str, task_id: str, map_index: int) -> str:
        path = (
            f"/api/v2/dags/{quote(dag_id, safe='')}/dagRuns/{quote(run_id, safe='')}"
            f"/taskInstances/{quote(task_id, safe='')}"
        )
        return path if map_index == -1 else f"{path}/{map_index}"

    def tries(self, dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> list[dict[str, Any]]:
        """Every try of one task instance as Airflow lists them (``GET .../tries``): state, times, hostname."""
        answer = self.request("GET", self._ti_path(dag_id, run_id, task_id, map_index) + "/tries") or {}
        return [dict(item) for item in answer.get("task_instances", [])]

    def try_log(self, dag_id: str, run_id: str, task_id: str, map_index: int, try_number: int) -> list[Any]:
        """The log of one try (``GET .../logs/{try_number}``, whole): structured entries (dicts) or lines."""
        path = f"{self._ti_path(dag_id, run_id, task_id, -1)}/logs/{try_number}"
        answer = self.request("GET", path, params={"full_content": "true", "map_index": map_index}) or {}
        content = answer.get("content") if isinstance(answer, Mapping) else None
        return list(content) if isinstance(content, list) else []

    def event_logs(
        self,
        dag_id: str,
        run_id: str,
        task_id: str,
        map_index: int,
        try_number: int,
        events: Sequence[str],
    ) -> list[dict[str, Any]]:
        """The audit-log rows ``events`` of one try (``GET /api/v2/eventLogs``): event, extra, when."""
        params: dict[str, Any] = {
            "dag_id": dag_id,
            "run_id": run_id,
            "task_id": task_id,
            "map_index": map_index,
            "try_number": try_number,
            "included_events": list(events),
            "limit": PAGE_SIZE,
        }
        answer = self.request("GET", "/api/v2/eventLogs", params=params) or {}
        return [dict(item) for item in answer.get("event_logs", [])]

    def dag_run(self, dag_id: str, run_id: str) -> dict[str, Any]:
        return dict(
            self.request("GET", f"/api/v2/dags/{quote(dag_id, safe='')}/dagRuns/{quote(run_id, safe='')}")
        )

    def task_instances_batch(
        self,
        *,
        dag_ids: Sequence[str] | None = None,
        run_ids: Sequence[str] | None = None,
        task_ids: Sequence[str] | None = None,
        states: Sequence[str] | None = None,
        ended_from: datetime | None = None,
        ended_until: datetime | None = None,
        started_from: datetime | None = None,
        order_by: str = "id",
        offset: int = 0,
        limit: int = PAGE_SIZE,
    ) -> tuple[list[TaskInstanceRef], int]:
        """One page of task instances across DAGs and runs (``POST .../dagRuns/~/taskInstances/list``).

        Each list filters with ``IN`` (so ``dag_ids`` x ``run_ids`` x ``task_ids`` is asked: the caller
        keeps the rows it wants); ``ended_from``/``ended_until`` bound ``end_date`` (both inclusive),
        ``started_from`` ``start_date``.
        ``limit`` is at most ``[api] maximum_page_limit`` (100 by default). Returns the page and
        ``total_entries``.
        """
        body: dict[str, Any] = {"page_offset": offset, "page_limit": limit, "order_by": order_by}
        for name, values in (
            ("dag_ids", dag_ids),
            ("dag_run_ids", run_ids),
            ("task_ids", task_ids),
            ("state", states),
        ):
            if values is not None:
                body[name] = list(values)
        if ended_from is not None:
            body["end_date_gte"] = ended_from.isoformat()
        if ended_until is not None:
            body["end_date_lte"] = ended_until.isoformat()
        if started_from is not None:
            body["start_date_gte"] = started_from.isoformat()
        answer = self.request("POST", "/api/v2/dags/~/dagRuns/~/taskInstances/list", json=body) or {}
        items = [TaskInstanceRef.from_json(item) for item in answer.get("task_instances", [])]
        return items, int(answer.get("total_entries") or 0)

    def dag_versions(self, dag_id: str) -> list[DagVersion]:
        """Every version Airflow still has of ``dag_id``, oldest first (``GET .../dagVersions``)."""
        path = f"/api/v2/dags/{quote(dag_id, safe='')}/dagVersions"
        versions = self._paged(path, "dag_versions", {"order_by": "version_number"})
        return [DagVersion.from_json(item) for item in versions]

    def dag_ids_tagged(self, tag: str) -> list[str]:
        """The ids of every DAG carrying ``tag`` (paused or not)."""
        return [str(dag["dag_id"]) for dag in self._paged("/api/v2/dags", "dags", {"tags": tag})]

    def pools(self) -> dict[str, dict[str, Any]]:
        """Every pool by name."""
        return {str(pool["name"]): dict(pool) for pool in self._paged("/api/v2/pools", "pools")}

    def _paged(self, path: str, key: str, params: Mapping[str, Any] | None = None) -> Iterator[Any]:
        """Every item of a list endpoint (its pages' ``key``), ``PAGE_SIZE`` a request, as the pages are read."""
        offset = 0
        while True:
            page = self.request("GET", path, params={**(params or {}), "limit": PAGE_SIZE, "offset": offset})
            items = list(page.get(key, []))
            yield from items
            offset += len(items)
            if len(items) < PAGE_SIZE:
                return

    def create_pool(self, body: Mapping[str, Any]) -> None:
        self.request("POST", "/api/v2/pools", json=dict(body))

    def update_pool(self, body: Mapping[str, Any]) -> None:
        self.request("PATCH", f"/api/v2/pools/{quote(str(body['name']), safe='')}", json=dict(body))

    def variable(self, key: str) -> str | None:
        """An Airflow Variable's value, or None when it does not exist."""
        try:
            answer = self.request("GET", f"/api/v2/variables/{quote(key, safe='')}")
        except AirflowApiError as exc:
            if exc.status_code == 404:
                return None
            raise
        return None if answer is None else answer.get("value")
