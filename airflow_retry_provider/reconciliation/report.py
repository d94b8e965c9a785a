"""Build and store one workspace's reconciliation report, and summarise a run over many workspaces.

A report is the pure gap findings (``rules.find_gaps`` over the workspace's snapshot) plus the
connector health computed in PostgreSQL (``trails.connector_health_sql``). It is stored in
``reconciliation_reports`` / ``reconciliation_findings`` (one row per workspace and ``as_of``; older
reports are kept as history) and written as a JSON artifact and a Markdown summary under
``<directory>/<as_of>/``. Findings are data, never errors: only a failure to read, store or write
raises.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

from airflow_retry_provider import metrics
from airflow_retry_provider.reconciliation.health import DEFAULT_WINDOW
from airflow_retry_provider.reconciliation.models import (
    LAYERS,
    ConnectorHealth,
    Finding,
    format_timestamp,
    parse_timestamp,
)
from airflow_retry_provider.reconciliation.rules import find_gaps
from airflow_retry_provider.reconciliation.sql import query
from airflow_retry_provider.reconciliation.trails import (
    connector_health_sql,
    fetch_all,
    list_workspaces,
    load_snapshots,
)
from airflow_retry_provider.sql import transaction

__all__ = [
    "WorkspaceReport",
    "build_report",
    "build_reports",
    "default_output_dir",
    "load_notifier",
    "reconcile_all",
    "reconcile_workspace",
    "reconcile_workspaces",
    "run_directory",
    "store_report",
    "store_reports",
    "summarise",
    "write_artifacts",
    "artifact_paths",
]

_UNHEALTHY = ("failing", "degraded", "stopped")


def _identity(finding: Finding) -> tuple[str, str, str]:
    return (finding.layer, finding.kind, finding.subject)


@dataclass(frozen=True)
class WorkspaceReport:
    """One workspace's findings and connector health at ``as_of``.

    :param workspace_id: the workspace.
    :param as_of: the time the report describes (UTC).
    :param window: the health window ending at ``as_of``.
    :param findings: gap findings in report order.
    :param health: one entry per connector, sorted by connector.
    :param new_findings: the findings whose (layer, kind, subject) was not in the workspace's
        previous report (every finding when there is no previous report).
    :param report_id: the stored report's id, once stored.
    """

    workspace_id: str
    as_of: datetime
    window: timedelta
    findings: tuple[Finding, ...] = ()
    health: tuple[ConnectorHealth, ...] = ()
    new_findings: tuple[Finding, ...] = ()
    report_id: int | None = field(default=None, compare=False)

    @property
    def unhealthy(self) -> tuple[ConnectorHealth, ...]:
        """Connectors that are failing, degraded or stopped."""
        return tuple(h for h in self.health if h.status in _UNHEALTHY)

    def to_dict(self) -> dict[str, Any]:
        """The JSON artifact: everything in the report, timestamps in ISO 8601 UTC."""
        return {
            "workspace_id": self.workspace_id,
            "report_id": self.report_id,
            "as_of": format_timestamp(self.as_of),
            "window_hours": self.window.total_seconds() / 3600,
            "findings": [dict(d) for d in self._dicts.findings],
            "new_findings": [dict(d) for d in self._dicts.new_findings],
            "connectors": [dict(d) for d in self._dicts.health],
        }

    @functools.cached_property
    def _dicts(self) -> _Dicts:
        # Made once per report: the stored rows, the JSON artifact and the outcome all need them
        # (callers get copies). A new finding is one of the findings: its dict is reused.
        findings = [f.to_dict() for f in self.findings]
        made = dict(zip(self.findings, findings, strict=True))
        new = [made[f] if f in made else f.to_dict() for f in self.new_findings]
        return _Dicts(findings, new, [h.to_dict() for h in self.health])

    def _stored_as(self, report_id: int) -> WorkspaceReport:
        """This report with its stored id, keeping the Markdown and dicts made so far (they do not show the id)."""
        stored = replace(self, report_id=report_id)
        for name in ("_markdown", "_dicts"):
            if name in self.__dict__:  # where functools.cached_property keeps a computed value
                stored.__dict__[name] = self.__dict__[name]
        return stored

    def outcome(self, artifacts: Mapping[str, Path] | None = None) -> dict[str, Any]:
        """A small JSON-ready summary (the DAG's XCom): counts, new findings and artifact paths."""
        by_layer = {layer: sum(1 for f in self.findings if f.layer == layer) for layer in LAYERS}
        return {
            "workspace_id": self.workspace_id,
            "report_id": self.report_id,
            "as_of": format_timestamp(self.as_of),
            "findings": len(self.findings),
            "findings_by_layer": by_layer,
            "new_findings": [dict(d) for d in self._dicts.new_findings],
            "connectors": len(self.health),
            "unhealthy_connectors": {h.connector_id: h.status for h in self.unhealthy},
            "artifacts": {name: str(path) for name, path in (artifacts or {}).items()},
        }

    def markdown(self) -> str:
        """The Markdown summary: counts, then a findings table and a connector health table."""
        return self._markdown

    @functools.cached_property
    def _markdown(self) -> str:
        new = len(self.new_findings)
        lines = [
            f"# Reconciliation: workspace `{_cell(self.workspace_id)}`",
            "",
            f"As of {format_timestamp(self.as_of)}, health window {_hours(self.window)} h: "
            f"{len(self.findings)} finding(s) ({new} new), {len(self.health)} connector(s) "
            f"({len(self.unhealthy)} not healthy).",
            "",
            "## Findings",
            "",
        ]
        if self.findings:
            new_ids = {_identity(f) for f in self.new_findings}
            lines += [
                "| Layer | Kind | Subject | Expected after | Observed at | New | Action |",
                "| --- | --- | --- | --- | --- | --- | --- |",
            ]
            for f in self.findings:
                lines.append(
                    f"| {f.layer} | {f.kind} | {_cell(f.subject)} | {format_timestamp(f.expected_after)} "
                    f"| {format_timestamp(f.observed_at) or '-'} | {'yes' if _identity(f) in new_ids else ''} "
                    f"| {_cell(f.action)} |"
                )
        else:
            lines.append("No gaps between layers.")
        lines += ["", "## Connector health", ""]
        if self.health:
            lines += [
                "| Connector | Status | Runs | Failed | Error rate | p50 ms | p95 ms | Last run | Freshness s |",
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
            ]
            for h in self.health:
                lines.append(
                    f"| {_cell(h.connector_id)} | {h.status} | {h.runs} | {h.failed_runs} "
                    f"| {_number(h.error_rate, 3)} | {_number(h.p50_ms, 1)} | {_number(h.p95_ms, 1)} "
                    f"| {format_timestamp(h.last_run_at) or '-'} | {_number(h.freshness_seconds, 0)} |"
                )
        else:
            lines.append("No connectors.")
        return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class _Dicts:
    findings: list[dict[str, Any]]
    new_findings: list[dict[str, Any]]
    health: list[dict[str, Any]]


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _number(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _hours(window: timedelta) -> str:
    return f"{window.total_seconds() / 3600:g}"


def _stamp(as_of: datetime) -> str:
    utc = parse_timestamp(as_of, "as_of")
    return utc.strftime("%Y%m%dT%H%M%S") + (f".{utc.microsecond:06d}" if utc.microsecond else "") + "Z"


def default_output_dir() -> Path:
    """``[retry_provider] reconciliation_dir``, else ``$AIRFLOW_HOME/reconciliation`` (``~/airflow`` by default)."""
    from airflow_retry_provider import settings

    configured: Path | None = settings.reconciliation_dir()
    if configured:
        return configured
    home = os.environ.get("AIRFLOW_HOME") or str(Path.home() / "airflow")
    return Path(home) / "reconciliation"


def run_directory(directory: Path, as_of: datetime) -> Path:
    """Where one run's artifacts go: ``<directory>/<as_of in UTC, e.g. 20261130T120000Z>/``."""
    return Path(directory) / _stamp(as_of)


# --------------------------------------------------------------------------- building and storing


def build_reports(
    conn: Any, workspace_ids: Sequence[str], as_of: datetime, window: timedelta = DEFAULT_WINDOW
) -> list[WorkspaceReport]:
    """Read the given workspaces and compute their reports, in the given order (nothing is written).

    Each workspace's report depends only on its own rows: the queries filter by the workspace ids
    and group by workspace, and ``find_gaps`` runs on one workspace's snapshot at a time.

    :param conn: an open connection to the provider's database.
    :param workspace_ids: the workspaces (one, or a batch).
    :param as_of: the time the reports describe (timezone-aware).
    :param window: the connector health window ending at ``as_of``.
    """
    as_of = parse_timestamp(as_of, "as_of")
    ids = list(dict.fromkeys(workspace_ids))
    if not ids:
        return []
    snapshots = load_snapshots(conn, ids)
    health: dict[str, list[ConnectorHealth]] = defaultdict(list)
    for entry in connector_health_sql(conn, ids, as_of, window):
        health[entry.workspace_id].append(entry)
    previous: dict[str, set[tuple[str, str, str]]] = defaultdict(set)
    for row in fetch_all(conn, "previous_findings", {"workspace_ids": ids, "as_of": as_of}):
        previous[row["workspace_id"]].add((row["layer"], row["kind"], row["subject"]))
    reports = []
    for ws in ids:
        findings = tuple(find_gaps(snapshots[ws], workspace=ws))
        new = tuple(f for f in findings if _identity(f) not in previous[ws])
        reports.append(WorkspaceReport(ws, as_of, window, findings, tuple(health[ws]), new))
    return reports


def build_report(
    conn: Any, workspace_id: str, as_of: datetime, window: timedelta = DEFAULT_WINDOW
) -> WorkspaceReport:
    """One workspace's report (see :func:`build_reports`)."""
    return build_reports(conn, [workspace_id], as_of, window)[0]


def store_reports(conn: Any, reports: Sequence[WorkspaceReport]) -> list[WorkspaceReport]:
    """Store reports and their findings in the caller's transaction; return them with their ``report_id``.

    All reports share one ``as_of`` and window (as :func:`build_reports` makes them). A report for
    the same workspace and ``as_of`` (a task re-run) is replaced; older reports are kept as history.
    """
    if not reports:
        return []
    as_of, window = reports[0].as_of, reports[0].window
    if any(r.as_of != as_of or r.window != window for r in reports):
        raise ValueError("reports stored together must share as_of and window")
    reports_json = [
        {
            "workspace_id": r.workspace_id,
            "findings_count": len(r.findings),
            "new_findings": len(r.new_findings),
            "health": r._dicts.health,
            "summary": r.markdown(),
        }
        for r in reports
    ]
    with conn.cursor() as cursor:
        cursor.execute(
            query("upsert_reports"),
            {"as_of": as_of, "window_seconds": window.total_seconds(), "reports": _json(reports_json)},
        )
        report_ids = {ws: int(report_id) for report_id, ws in cursor.fetchall()}
        stored = [r._stored_as(report_ids[r.workspace_id]) for r in reports]
        cursor.execute(
            query("delete_report_findings"),
            {"workspace_ids": list(report_ids), "report_ids": list(report_ids.values())},
        )
        findings = [{**d, "report_id": r.report_id} for r in stored for d in r._dicts.findings]
        if findings:
            cursor.execute(query("insert_findings"), {"findings": _json(findings)})
    return stored


def _json(rows: list[dict[str, Any]]) -> str:
    """Rows for json_to_recordset. Text goes as is, not as \\u escapes the server would have to decode."""
    return json.dumps(rows, ensure_ascii=False)


def store_report(conn: Any, report: WorkspaceReport) -> WorkspaceReport:
    """Store one report (see :func:`store_reports`)."""
    return store_reports(conn, [report])[0]


def write_artifacts(report: WorkspaceReport, directory: Path) -> dict[str, Path]:
    """Write ``<ws>.json`` (the whole report) and ``<ws>.md`` (the summary) under the run's directory.

    The workspace id is percent-encoded in the file names, so any id is a safe, distinct name.
    """
    paths = artifact_paths(directory, report.workspace_id, report.as_of)
    paths["json"].parent.mkdir(parents=True, exist_ok=True)
    _write(paths["json"], json.dumps(report.to_dict(), sort_keys=True) + "\n")
    _write(paths["markdown"], report.markdown())
    return paths


def artifact_paths(directory: Path, workspace_id: str, as_of: datetime) -> dict[str, Path]:
    """Where the artifacts of one workspace's report at ``as_of`` are (``json`` and ``markdown``)."""
    folder = run_directory(directory, as_of)
    name = quote(workspace_id, safe="")
    return {"json": folder / f"{name}.json", "markdown": folder / f"{name}.md"}


def _write(path: Path, text: str) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(path)  # readers never see half a file


def reconcile_workspaces(
    conn: Any,
    workspace_ids: Sequence[str],
    as_of: datetime,
    window: timedelta = DEFAULT_WINDOW,
    directory: Path | None = None,
) -> list[dict[str, Any]]:
    """Build, store (and commit) and write the workspaces' reports; return their outcomes.

    :param directory: where artifacts go; :func:`default_output_dir` when ``None``.
    """
    reports = _store_batch(conn, workspace_ids, as_of, window)
    return _write_batch(reports, directory or default_output_dir())


def _store_batch(
    conn: Any, workspace_ids: Sequence[str], as_of: datetime, window: timedelta
) -> list[WorkspaceReport]:
    """Build, store and commit the workspaces' reports (rolled back on error); count their findings."""
    with transaction(conn, close=False):
        reports = store_reports(conn, build_reports(conn, workspace_ids, as_of, window))
    found = Counter((finding.layer, finding.kind) for report in reports for finding in report.findings)
    for (layer, kind), count in sorted(found.items()):
        metrics.incr("reconciliation", "finding", layer, kind, count=count)
    return reports


def _write_batch(reports: Sequence[WorkspaceReport], folder: Path) -> list[dict[str, Any]]:
    return [report.outcome(write_artifacts(report, folder)) for report in reports]


def reconcile_workspace(
    conn: Any,
    workspace_id: str,
    as_of: datetime,
    window: timedelta = DEFAULT_WINDOW,
    directory: Path | None = None,
) -> dict[str, Any]:
    """One workspace's report, built, stored and written: what each mapped task of the DAG runs."""
    return reconcile_workspaces(conn, [workspace_id], as_of, window, directory)[0]


def reconcile_all(
    conn: Any,
    as_of: datetime,
    window: timedelta = DEFAULT_WINDOW,
    directory: Path | None = None,
    batch_size: int = 250,
) -> dict[str, Any]:
    """Every workspace's report, in batches of ``batch_size`` workspaces, then the run's summary.

    Each batch is stored (and committed) before its artifacts are written, as in
    :func:`reconcile_workspaces`; an error writing them is raised once every batch is stored.
    """
    workspaces = list_workspaces(conn)
    conn.commit()
    folder = directory or default_output_dir()
    # One thread writes a batch's artifacts while this one builds and stores the next batch: creating
    # the files mostly waits on the file system (seconds for 1,000 workspaces on a slow disk), and
    # the database work mostly waits on the server, so the waits overlap.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="reconciliation-artifacts") as writer:
        written = [
            writer.submit(
                _write_batch,
                _store_batch(conn, workspaces[start : start + batch_size], as_of, window),
                folder,
            )
            for start in range(0, len(workspaces), batch_size)
        ]
        outcomes = [outcome for batch in written for outcome in batch.result()]
    return summarise(outcomes, as_of, directory)


# --------------------------------------------------------------------------- a whole run


def summarise(
    outcomes: Iterable[Mapping[str, Any]], as_of: datetime, directory: Path | None = None
) -> dict[str, Any]:
    """Combine the workspaces' outcomes into ``summary.json`` and ``summary.md`` for the run; return it.

    Zero workspaces give an empty summary (and its files), not an error.
    """
    rows = sorted((dict(o) for o in outcomes), key=lambda o: str(o["workspace_id"]))
    folder = run_directory(directory or default_output_dir(), parse_timestamp(as_of, "as_of"))
    folder.mkdir(parents=True, exist_ok=True)
    new_findings = [f for o in rows for f in o.get("new_findings", [])]
    summary: dict[str, Any] = {
        "as_of": format_timestamp(parse_timestamp(as_of, "as_of")),
        "workspaces": len(rows),
        "findings": sum(int(o["findings"]) for o in rows),
        "new_findings": new_findings,
        "unhealthy_connectors": sum(len(o.get("unhealthy_connectors", {})) for o in rows),
        "reports": rows,
        "artifacts": {"json": str(folder / "summary.json"), "markdown": str(folder / "summary.md")},
    }
    lines = [
        "# Medallion reconciliation",
        "",
        f"As of {summary['as_of']}: {summary['workspaces']} workspace(s), {summary['findings']} "
        f"finding(s) ({len(new_findings)} new), {summary['unhealthy_connectors']} connector(s) not healthy.",
        "",
    ]
    if rows:
        lines += [
            "| Workspace | Bronze | Silver | Gold | New | Connectors not healthy | Report |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for o in rows:
            layers = o.get("findings_by_layer", {})
            unhealthy = ", ".join(
                f"{_cell(c)} ({s})" for c, s in sorted(o.get("unhealthy_connectors", {}).items())
            )
            lines.append(
                f"| {_cell(str(o['workspace_id']))} | {layers.get('bronze', 0)} | {layers.get('silver', 0)} "
                f"| {layers.get('gold', 0)} | {len(o.get('new_findings', []))} | {unhealthy or '-'} "
                f"| {_cell(str(o.get('artifacts', {}).get('markdown', '-')))} |"
            )
    else:
        lines.append("No workspaces: no trail rows yet.")
    _write(folder / "summary.json", json.dumps(summary, indent=2, sort_keys=True) + "\n")
    _write(folder / "summary.md", "\n".join(lines) + "\n")
    return summary


def load_notifier(spec: str, allowed: Sequence[str] = ()) -> Callable[[dict[str, Any]], Any]:
    """Import a notifier named ``package.module:function`` (or ``package.module.function``).

    The notifier is called with the run's :func:`summarise` dict when there are new findings. The
    name comes from a Variable anyone with Variable rights can edit, so only modules under one of
    the ``allowed`` prefixes (``[retry_provider] notifier_modules``, e.g. ``my_company.alerts``) are
    imported; nothing else ever is.
    """
    module_name, sep, attribute = spec.strip().partition(":")
    if not sep:
        module_name, _, attribute = spec.strip().rpartition(".")
    if not module_name or not attribute:
        raise ValueError(f"notifier {spec!r} is not 'package.module:function'")
    if not any(module_name == p or module_name.startswith(p.rstrip(".") + ".") for p in allowed):
        raise ValueError(
            f"notifier {spec!r}: module {module_name!r} is not under an allowed prefix "
            f"([retry_provider] notifier_modules = {','.join(allowed)!r})"
        )
    target: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise TypeError(f"notifier {spec!r} is not callable")
    return target
