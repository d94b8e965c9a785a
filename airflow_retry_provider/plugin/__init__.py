"""The Airflow plugin, loaded through the ``airflow.plugins`` entry point.

It only mounts the app built by :func:`~airflow_retry_provider.plugin.app.create_app` on the
api-server and tells Airflow's UI where to show it: "Dead letters", "Medallion gaps",
"Connector health", "Dependencies" and "Deliveries" under Browse, and two tabs on each task instance ("Dead letters" and "Retries"). The app reaches no database until its first request.
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from airflow_retry_provider.plugin.app import URL_PREFIX, create_app

NAV_ROUTE = "dead-letters"
TI_TAB_ROUTE = "dead-letters-ti"
GAPS_ROUTE = "medallion-gaps"
HEALTH_ROUTE = "connector-health"
RETRIES_ROUTE = "retries-ti"
DEPENDENCIES_ROUTE = "dependencies"
DELIVERIES_ROUTE = "deliveries"


class RetryProviderPlugin(AirflowPlugin):
    """Airflow Retry Provider: the dead-letter pages, in Airflow's UI and behind its login."""

    name = "retry_provider"
    fastapi_apps = [{"app": create_app(), "url_prefix": URL_PREFIX, "name": "Dead letters"}]
    external_views = [
        {
            "name": "Dead letters",
            "href": f"{URL_PREFIX}/",
            "destination": "nav",
            "category": "browse",
            "url_route": NAV_ROUTE,
        },
        {
            "name": "Medallion gaps",
            "href": f"{URL_PREFIX}/medallion-gaps",
            "destination": "nav",
            "category": "browse",
            "url_route": GAPS_ROUTE,
        },
        {
            "name": "Connector health",
            "href": f"{URL_PREFIX}/connector-health",
            "destination": "nav",
            "category": "browse",
            "url_route": HEALTH_ROUTE,
        },
        {
            "name": "Dependencies",
            "href": f"{URL_PREFIX}/dependencies",
            "destination": "nav",
            "category": "browse",
            "url_route": DEPENDENCIES_ROUTE,
        },
        {
            "name": "Deliveries",
            "href": f"{URL_PREFIX}/deliveries",
            "destination": "nav",
            "category": "browse",
            "url_route": DELIVERIES_ROUTE,
        },
        {
            "name": "Dead letters",
            "href": (
                f"{URL_PREFIX}/ti?dag_id={{DAG_ID}}&run_id={{RUN_ID}}&task_id={{TASK_ID}}&map_index={{MAP_INDEX}}"
            ),
            "destination": "task_instance",
            "url_route": TI_TAB_ROUTE,
        },
        {
            "name": "Retries",
            "href": (
                f"{URL_PREFIX}/tries?dag_id={{DAG_ID}}&run_id={{RUN_ID}}&task_id={{TASK_ID}}&map_index={{MAP_INDEX}}"
            ),
            "destination": "task_instance",
            "url_route": RETRIES_ROUTE,
        },
    ]
