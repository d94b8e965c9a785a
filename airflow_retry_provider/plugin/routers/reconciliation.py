"""The reconciliation pages, "Medallion gaps" and "Connector health", and their JSON API.

``create_app`` includes this router in the dead-letter app, so they share its mount, its error
pages, its database and Airflow's authentication (``GetUserDep``: bearer token or the UI's
``_token`` cookie). They read the reports the ``medallion_reconciliation`` DAG stores
(``reconciliation_reports`` / ``reconciliation_findings``) on the provider's database.

Authorization: reconciliation data belongs to workspaces, not to DAGs, so one rule covers it all:
reading any of it requires read access to the DAG that writes it, ``medallion_reconciliation``
(the auth manager's ``is_authorized_dag`` GET on its task instances, with its team in multi-team
mode, through :class:`~airflow_retry_provider.plugin.access.Access`). Without it every page and API
route answers 403 and shows nothing: no workspace ids, no counts.

Workspace isolation: every read but the list of workspace ids filters by one workspace id.
Charts are inline SVG built on the server (:mod:`~airflow_retry_provider.plugin.svg`).

No ``from __future__ import annotations`` here: FastAPI reads the annotations at runtime.
"""

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Annotated, Any
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Depends, HTTPException, Query, Request, status
from fastapi.responses import HTMLResponse
from markupsafe import Markup

from airflow_retry_provider.database import ProviderDatabase
from airflow_retry_provider.plugin.access import Access, AccessDep
from airflow_retry_provider.plugin.deps import DatabaseDep, TimeZoneDep
from airflow_retry_provider.plugin.rendering import page
from airflow_retry_provider.plugin.rendering import query as query_string
from airflow_retry_provider.plugin.svg import Point, Series, line_chart
from airflow_retry_provider.reconciliation import trails
from airflow_retry_provider.reconciliation.models import LAYERS, ConnectorHealth, Finding, format_timestamp
from airflow_retry_provider.sql import transaction

__all__ = ["RECONCILIATION_DAG_ID", "HistoryEntry", "Report", "ReportViews", "router"]

#: The DAG whose read access grants reading every reconciliation report.
RECONCILIATION_DAG_ID = "medallion_reconciliation"
#: Reports shown in the history charts by default: a day of 15-minute runs.
HISTORY = 96
MAX_HISTORY = 1000
LAYER_COLORS = {"bronze": "#a0522d", "silver": "#6b7b8c", "gold": "#c99700"}


# -- reads ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Report:
    """One stored report of a workspace (without its findings)."""

    id: int
    workspace_id: str
    as_of: datetime
    window_seconds: float
    created_at: datetime
    findings_count: int
    new_findings: int
    health: tuple[ConnectorHealth, ...]

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "Report":
        health = row["health"]
        if isinstance(health, str | bytes):  # a driver that does not decode jsonb
            health = json.loads(health)
        return cls(
            id=int(row["id"]),
            workspace_id=str(row["workspace_id"]),
            as_of=row["as_of"],
            window_seconds=float(row["window_seconds"]),
            created_at=row["created_at"],
            findings_count=int(row["findings_count"]),
            new_findings=int(row["new_findings"]),
            health=tuple(
                ConnectorHealth.from_dict(item, f"health[{i}]") for i, item in enumerate(health or [])
            ),
        )

    @property
    def unhealthy(self) -> dict[str, str]:
        return {h.connector_id: h.status for h in self.health if h.status != "healthy"}

    def to_json(self) -> dict[str, Any]:
        return {
            "report_id": self.id,
            "workspace_id": self.workspace_id,
            "as_of": format_timestamp(self.as_of),
            "created_at": format_timestamp(self.created_at),
            "window_hours": self.window_seconds / 3600,
            "findings_count": self.findings_count,
            "new_findings": self.new_findings,
            "connectors": len(self.health),
            "unhealthy_connectors": self.unhealthy,
        }


@dataclass(frozen=True)
class HistoryEntry:
    """A report in a workspace's history, with its open findings per layer."""

    report: Report
    by_layer: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        return {
            **self.report.to_json(),
            "findings_by_layer": self.by_layer,
            "health": [
                {k: v for k, v in h.to_dict().items() if k != "workspace_id"} for h in self.report.health
            ],
        }


@dataclass(frozen=True)
class ShownFinding:
    """A finding of the shown report, and whether the workspace's previous report lacked it."""

    finding: Finding
    new: bool

    def to_json(self) -> dict[str, Any]:
        return {**self.finding.to_dict(), "new": self.new}


class ReportViews:
    """The pages' reads, on one connection of the provider's database; each filters by workspace id.

    The statements are the reconciliation's (``reconciliation/sql/queries.sql``), run by
    :func:`~airflow_retry_provider.reconciliation.trails.fetch_all`.
    """

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    @classmethod
    @contextmanager
    def reading(cls, db: ProviderDatabase) -> Iterator["ReportViews"]:
        """Views on one connection and one transaction of the database (as ``LetterViews.reading``)."""
        with transaction(db.connect()) as conn:
            yield cls(conn)

    def _fetch(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        return trails.fetch_all(self._conn, name, params)

    def workspaces(self) -> list[str]:
        """Every workspace with a stored report, in code point order."""
        return [str(row["workspace_id"]) for row in self._fetch("report_workspaces", {})]

    def latest_reports(self, workspace_ids: Sequence[str]) -> list[Report]:
        """The latest report of each of the workspaces, in workspace order."""
        rows = self._fetch("latest_reports", {"workspace_ids": list(workspace_ids)})
        return [Report.from_row(row) for row in rows]

    def report(self, workspace_id: str, report_id: int | None = None) -> Report | None:
        """The workspace's latest report, or its report ``report_id``; ``None`` if there is none."""
        if report_id is None:
            rows = self._fetch("latest_report", {"workspace_id": workspace_id})
        else:
            rows = self._fetch("workspace_report", {"workspace_id": workspace_id, "report_id": report_id})
        return Report.from_row(rows[0]) if rows else None

    def findings(self, report: Report) -> list[ShownFinding]:
        """The report's findings in report order, each marked new when the previous report lacked it."""
        rows = self._fetch("report_findings", {"workspace_id": report.workspace_id, "report_id": report.id})
        previous = {
            (row["layer"], row["kind"], row["subject"])
            for row in self._fetch(
                "previous_findings", {"workspace_ids": [report.workspace_id], "as_of": report.as_of}
            )
        }
        shown = []
        for i, row in enumerate(rows):
            finding = Finding.from_dict(row, f"findings[{i}]")
            shown.append(
                ShownFinding(finding, (finding.layer, finding.kind, finding.subject) not in previous)
            )
        return shown

    def history(self, workspace_id: str, limit: int) -> list[HistoryEntry]:
        """The workspace's latest ``limit`` reports, newest first, with open findings per layer."""
        rows = self._fetch("report_history", {"workspace_id": workspace_id, "limit": limit})
        return [
            HistoryEntry(Report.from_row(row), {layer: int(row[f"{layer}_findings"]) for layer in LAYERS})
            for row in rows
        ]


# -- charts ---------------------------------------------------------------------------------------


class Charts:
    """The pages' charts from a history (newest first), times in the UI's time zone (UTC on hover)."""

    def __init__(self, tz: ZoneInfo) -> None:
        self.tz = tz

    def when(self, moment: datetime) -> str:
        local = moment.astimezone(self.tz).strftime("%Y-%m-%d %H:%M")
        utc = moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        return f"{local} ({utc})"

    def _x_labels(self, oldest_first: list[HistoryEntry]) -> tuple[str, str]:
        if not oldest_first:
            return ("", "")
        first, last = oldest_first[0].report.as_of, oldest_first[-1].report.as_of
        fmt = "%m-%d %H:%M"
        return (first.astimezone(self.tz).strftime(fmt), last.astimezone(self.tz).strftime(fmt))

    def findings_per_layer(self, history: list[HistoryEntry]) -> Markup:
        """Open findings per layer over the reports, one line per layer."""
        entries = list(reversed(history))
        series = [
            Series(
                name=layer,
                color=LAYER_COLORS[layer],
                points=tuple(
                    Point(
                        e.report.as_of.timestamp(),
                        e.by_layer[layer],
                        f"{self.when(e.report.as_of)}: {e.by_layer[layer]} open {layer} finding(s)",
                    )
                    for e in entries
                ),
            )
            for layer in LAYERS
        ]
        return Markup(
            line_chart(
                series,
                title="Open findings per layer",
                width=720,
                height=200,
                y_label="findings",
                x_labels=self._x_labels(entries),
                y_format=lambda v: f"{v:.0f}",
            )
        )

    def connector(self, history: list[HistoryEntry], connector_id: str) -> dict[str, Markup]:
        """Sparklines of one connector's p95 and error rate over the reports (a gap where it had no run)."""
        entries = list(reversed(history))
        health = [next((h for h in e.report.health if h.connector_id == connector_id), None) for e in entries]
        p95, errors = [], []
        for entry, h in zip(entries, health, strict=True):
            x, when = entry.report.as_of.timestamp(), self.when(entry.report.as_of)
            value = h.p95_ms if h else None
            rate = h.error_rate if h else None
            p95.append(
                Point(x, value, f"{when}: p95 " + ("no runs" if value is None else f"{value:,.0f} ms"))
            )
            errors.append(
                Point(
                    x,
                    None if rate is None else rate * 100,
                    f"{when}: error rate " + ("no runs" if rate is None else f"{rate * 100:.1f}%"),
                )
            )
        labels = self._x_labels(entries)

        def spark(name: str, points: list[Point], color: str, title: str, unit: str, y_format: Any) -> Markup:
            """One sparkline of the connector (both share the size, the axis labels and the style)."""
            series = [Series(f"{connector_id} {name}", tuple(points), color)]
            return Markup(
                line_chart(
                    series,
                    title=title,
                    width=240,
                    height=72,
                    y_label=unit,
                    x_labels=labels,
                    y_format=y_format,
                    css_class="chart spark",
                )
            )

        return {
            "p95": spark("p95", p95, "#0b69a3", f"p95 of {connector_id}", "ms", _short),
            "error_rate": spark(
                "error rate", errors, "#b44d12", f"Error rate of {connector_id}", "%", lambda v: f"{v:.0f}"
            ),
        }


def _short(value: float) -> str:
    """1234 -> 1.2k, 2500000 -> 2.5M: axis ticks that fit a sparkline."""
    for size, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.1f}".rstrip("0").rstrip(".") + suffix
    return f"{value:.0f}"


# -- routes ---------------------------------------------------------------------------------------


def reader(access: AccessDep) -> Access:
    """The signed-in user, if they may read ``medallion_reconciliation``; else 403."""
    access.require([RECONCILIATION_DAG_ID], "GET")
    return access


ReaderDep = Annotated[Access, Depends(reader)]
HistoryLimit = Annotated[int, Query(ge=2, le=MAX_HISTORY, description="how many reports, newest first")]


def charts_dep(tz: TimeZoneDep) -> Charts:
    return Charts(tz)


ChartsDep = Annotated[Charts, Depends(charts_dep)]


def selection(
    views: ReportViews, workspace_id: str | None, report_id: int | None
) -> tuple[list[Report], Report | None]:
    """Every workspace's latest report, and the report to show (404 for an unknown one)."""
    latest = views.latest_reports(views.workspaces())
    if workspace_id:
        return latest, one_report(views, workspace_id, report_id)
    if report_id is not None:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "report_id needs a workspace_id")
    return latest, (latest[0] if latest else None)


def one_report(views: ReportViews, workspace_id: str, report_id: int | None) -> Report:
    """The workspace's latest report, or its report ``report_id`` (404 when there is none)."""
    shown = views.report(workspace_id, report_id)
    if shown is None:
        what = f"report {report_id} of workspace" if report_id is not None else "report for workspace"
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no {what} {workspace_id!r}")
    return shown


router = APIRouter()

# -- pages ----------------------------------------------------------------------------------------


@router.get("/medallion-gaps", response_class=HTMLResponse, include_in_schema=False)
def medallion_gaps_page(
    request: Request,
    access: ReaderDep,
    db: DatabaseDep,
    charts: ChartsDep,
    history: HistoryLimit = HISTORY,
    workspace_id: str | None = None,
    report_id: int | None = None,
):
    """A workspace's report (latest by default): its findings, and its history with a chart per layer."""
    with ReportViews.reading(db) as views:
        latest, shown = selection(views, workspace_id, report_id)
        findings = views.findings(shown) if shown else []
        past = views.history(shown.workspace_id, history) if shown else []
    return page(
        request,
        "medallion_gaps.html",
        access,
        dag_id=RECONCILIATION_DAG_ID,
        workspaces=latest,
        report=shown,
        is_latest=bool(shown and past and past[0].report.id == shown.id),
        findings=findings,
        new_count=sum(1 for f in findings if f.new),
        history=past,
        chart=charts.findings_per_layer(past) if past else None,
        when=charts.when,
        query=query_string,
    )


@router.get("/connector-health", response_class=HTMLResponse, include_in_schema=False)
def connector_health_page(
    request: Request,
    access: ReaderDep,
    db: DatabaseDep,
    charts: ChartsDep,
    history: HistoryLimit = HISTORY,
    workspace_id: str | None = None,
    report_id: int | None = None,
):
    """A workspace's connectors as of its latest report, each with p95 and error-rate sparklines."""
    with ReportViews.reading(db) as views:
        latest, shown = selection(views, workspace_id, report_id)
        past = views.history(shown.workspace_id, history) if shown else []
    return page(
        request,
        "connector_health.html",
        access,
        dag_id=RECONCILIATION_DAG_ID,
        workspaces=latest,
        report=shown,
        history=past,
        sparks={h.connector_id: charts.connector(past, h.connector_id) for h in shown.health}
        if shown
        else {},
        when=charts.when,
        query=query_string,
    )


# -- JSON API -------------------------------------------------------------------------------------


@router.get("/api/reconciliation/workspaces", tags=["reconciliation"])
def reconciliation_workspaces(access: ReaderDep, db: DatabaseDep) -> dict[str, Any]:
    """The latest report of every workspace: counts of findings and of connectors not healthy."""
    with ReportViews.reading(db) as views:
        latest = views.latest_reports(views.workspaces())
    return {"workspaces": [report.to_json() for report in latest]}


@router.get("/api/reconciliation/report", tags=["reconciliation"])
def reconciliation_report(
    access: ReaderDep, db: DatabaseDep, workspace_id: str, report_id: int | None = None
) -> dict[str, Any]:
    """A workspace's latest report (or report ``report_id``): its findings and its connector health."""
    with ReportViews.reading(db) as views:
        shown = one_report(views, workspace_id, report_id)
        findings = views.findings(shown)
    return {
        "report": shown.to_json(),
        "findings": [f.to_json() for f in findings],
        "health": [h.to_dict() for h in shown.health],
    }


@router.get("/api/reconciliation/history", tags=["reconciliation"])
def reconciliation_history(
    access: ReaderDep, db: DatabaseDep, workspace_id: str, limit: HistoryLimit = HISTORY
) -> dict[str, Any]:
    """A workspace's reports, newest first: open findings per layer and each connector's health."""
    with ReportViews.reading(db) as views:
        past = views.history(workspace_id, limit)
    if not past:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no report for workspace {workspace_id!r}")
    return {"workspace_id": workspace_id, "reports": [entry.to_json() for entry in past]}
