"""Medallion reconciliation: every 15 minutes (Brasília time), report the gaps between bronze, silver
and gold and each connector's health, per workspace.

It ships with the provider, not as an example: it reconciles the trails the provider's operators
write, for every workspace, and its reports feed the Reconciliation pages and their alerts.

One task lists the workspaces, one mapped task per workspace builds and stores its report
(``reconciliation_reports`` / ``reconciliation_findings``, history kept) and writes a JSON artifact
and a Markdown summary, and a final task writes the run's summary, alerts new findings and
connectors that turned stopped or failing (or recovered) through the configured notifiers
(``[retry_provider] alert_notifiers``), and calls the optional legacy notifier when new findings
appear. Findings never fail the DAG (it is a diagnostic); its own errors do
(the database unreachable, a bad ``as_of``, a notifier that cannot be imported or raises).

Parameters: ``as_of`` (ISO 8601 with offset; default the run's logical date, or its run_after for
a manual run) and ``window_hours`` (the connector health window, default 24).
Configuration: the Airflow connection ``retry_provider_default``; the Variable
``retry_provider_reconciliation_notifier`` (or ``AIRFLOW_VAR_RETRY_PROVIDER_RECONCILIATION_NOTIFIER``)
naming a ``package.module:function`` called with the run's summary when there are new findings
(only modules under a prefix of ``[retry_provider] notifier_modules`` are imported);
``[retry_provider] reconciliation_dir`` for the artifacts (default ``$AIRFLOW_HOME/reconciliation``).

The module imports only pendulum and ``airflow.sdk``: no database access at parse time.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pendulum
from airflow.sdk import DAG, CronTriggerTimetable, Param, task

BRASILIA = "America/Sao_Paulo"
NOTIFIER_VARIABLE = "retry_provider_reconciliation_notifier"


def _as_of(params: dict | None, logical_date: Any, dag_run: Any) -> datetime:
    """The run's ``as_of``: the ``as_of`` param, else the logical date, else the run's run_after."""
    from airflow_retry_provider.reconciliation.models import parse_timestamp

    chosen = (params or {}).get("as_of") or logical_date or getattr(dag_run, "run_after", None)
    if chosen is None:
        raise ValueError("no as_of: pass the as_of param or run the DAG with a logical date")
    return parse_timestamp(chosen, "as_of")


def _window(params: dict | None) -> timedelta:
    return timedelta(hours=float((params or {}).get("window_hours", 24)))


def _connection() -> Any:
    from airflow_retry_provider.database import ProviderDatabase

    return ProviderDatabase.from_conn_id().connect()


with DAG(
    dag_id="medallion_reconciliation",
    description="Gaps between bronze, silver and gold, and connector health, per workspace, every 15 minutes.",
    schedule=CronTriggerTimetable("*/15 * * * *", timezone=BRASILIA),
    start_date=pendulum.datetime(2026, 11, 1, tz=BRASILIA),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 0},  # the next run, 15 minutes later, is the retry
    params={
        "as_of": Param(
            None, type=["null", "string"], description="ISO 8601 with offset; default: the run's date"
        ),
        "window_hours": Param(24, type="number", exclusiveMinimum=0, description="connector health window"),
    },
    tags=["airflow-retry-provider", "reconciliation"],
) as dag:

    @task
    def list_workspaces(
        params: dict | None = None, logical_date: Any = None, dag_run: Any = None
    ) -> list[str]:
        """Create the trail tables if missing, then list every workspace that has trail rows."""
        from contextlib import closing

        from airflow_retry_provider.reconciliation import schema, trails

        _as_of(params, logical_date, dag_run)  # a bad as_of fails here, before any report is written
        with closing(_connection()) as conn:
            schema.ensure_trail_schema(conn)
            workspaces = trails.list_workspaces(conn)
            conn.commit()
        return workspaces

    @task(map_index_template="{{ workspace_id }}")
    def reconcile_workspace(
        workspace_id: str, params: dict | None = None, logical_date: Any = None, dag_run: Any = None
    ) -> dict:
        """Build, store and write one workspace's report; its findings are data, not errors."""
        from contextlib import closing

        from airflow_retry_provider.reconciliation import report

        with closing(_connection()) as conn:
            return report.reconcile_workspace(
                conn, workspace_id, _as_of(params, logical_date, dag_run), _window(params)
            )

    @task(trigger_rule="none_failed")
    def summarise(
        outcomes: Any, params: dict | None = None, logical_date: Any = None, dag_run: Any = None
    ) -> dict:
        """Write the run's summary; alert new findings and connector changes; call the legacy notifier."""
        from airflow.sdk import Variable

        from airflow_retry_provider import settings
        from airflow_retry_provider.reconciliation import report

        summary = report.summarise(outcomes or [], _as_of(params, logical_date, dag_run))
        from airflow_retry_provider.alerts import reconciliation_alerts
        from airflow_retry_provider.database import ProviderDatabase

        reconciliation_alerts(ProviderDatabase.from_conn_id(), summary)  # never raises
        notifier = Variable.get(NOTIFIER_VARIABLE, default=None)
        if notifier and summary["new_findings"]:
            report.load_notifier(notifier, settings.notifier_modules())(summary)
        return {key: summary[key] for key in ("as_of", "workspaces", "findings", "artifacts")}

    summarise(reconcile_workspace.expand(workspace_id=list_workspaces()))
