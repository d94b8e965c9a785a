"""The Airflow plugin, loaded through the ``airflow.plugins`` entry point.

It only mounts the app built by :func:`~airflow_retry_provider.plugin.app.create_app` on the
api-server and tells Airflow's UI where to show it: "Dead letters", "Medallion gaps",
"Connector health", "Dependencies" and "Deliveries" under Browse, and two tabs on each task instance ("Dead letters" and "Retries"). The app reaches no database until its first request.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from airflow.plugins_manager import AirflowPlugin

URL_PREFIX = "/retry-provider"
"""Where the app is mounted on the api-server."""

NAV_ROUTE = "dead-letters"
TI_TAB_ROUTE = "dead-letters-ti"
GAPS_ROUTE = "medallion-gaps"
HEALTH_ROUTE = "connector-health"
RETRIES_ROUTE = "retries-ti"
DEPENDENCIES_ROUTE = "dependencies"
DELIVERIES_ROUTE = "deliveries"


#: The task instance a tab is opened on, as Airflow fills in a tab's link.
TI_QUERY = "dag_id={DAG_ID}&run_id={RUN_ID}&task_id={TASK_ID}&map_index={MAP_INDEX}"


def browse_link(name: str, path: str, url_route: str) -> Any:
    """An entry of Airflow's Browse menu opening the app's page ``path`` (an ``ExternalViewDict`` on 3.4, a dict on 3.3)."""
    return {
        "name": name,
        "href": f"{URL_PREFIX}/{path}",
        "destination": "nav",
        "category": "browse",
        "url_route": url_route,
    }


def task_instance_tab(name: str, path: str, url_route: str) -> Any:
    """A tab on each task instance opening the app's page ``path`` for that instance (as :func:`browse_link`)."""
    return {
        "name": name,
        "href": f"{URL_PREFIX}/{path}?{TI_QUERY}",
        "destination": "task_instance",
        "url_route": url_route,
    }


@cache
def _apps() -> list[dict[str, Any]]:
    from airflow_retry_provider.plugin.app import create_app

    return [{"app": create_app(), "url_prefix": URL_PREFIX, "name": "Dead letters"}]


class _BuiltWhenRead:
    """The plugin's app, built the first time Airflow reads ``fastapi_apps``: only the api-server does.

    Every task process loads every plugin (the task runner looks for their listeners), so a plugin
    module that built its app on import made each task import FastAPI's routes, Airflow's API security
    and the pages: about 0.7 CPU-s a task, successful ones too (issue 58's storm profile).
    """

    def __get__(self, instance: object, owner: type | None = None) -> list[dict[str, Any]]:
        return _apps()


class RetryProviderPlugin(AirflowPlugin):
    """Airflow Retry Provider: the dead-letter pages, in Airflow's UI and behind its login."""

    name = "retry_provider"
    fastapi_apps = _BuiltWhenRead()  # type: ignore[assignment, unused-ignore]  # 3.4 types it list[FastAPIAppDict]
    external_views = [
        browse_link("Dead letters", "", NAV_ROUTE),
        browse_link("Medallion gaps", "medallion-gaps", GAPS_ROUTE),
        browse_link("Connector health", "connector-health", HEALTH_ROUTE),
        browse_link("Dependencies", "dependencies", DEPENDENCIES_ROUTE),
        browse_link("Deliveries", "deliveries", DELIVERIES_ROUTE),
        task_instance_tab("Dead letters", "ti", TI_TAB_ROUTE),
        task_instance_tab("Retries", "tries", RETRIES_ROUTE),
    ]
