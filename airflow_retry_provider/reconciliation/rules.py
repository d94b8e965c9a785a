"""Gap rules between the bronze, silver and gold layers: a pure function over a :class:`Snapshot`.

A finding is reported only where there is a real expectation:

* **bronze**: a *selected* table of a source whose latest ``ok`` run started at T is ``missing``
  if never processed and ``stale`` if processed before T.
* **silver**: a transform whose inputs (bronze tables) include at least one processed table is
  ``missing`` if it never ran and ``stale`` if it last ran before the newest processed input.
* **gold**: the same, with silver transforms that have run as the inputs.

"Before" is strict: equal times are not stale. Each workspace is computed from its own rows only.
Standard library only: no I/O, no clock.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import TypeVar

from airflow_retry_provider.reconciliation.models import (
    LAYERS,
    BronzeTable,
    Finding,
    Snapshot,
    SourceRun,
    Transform,
)

__all__ = ["find_gaps", "finding_sort_key"]

_Row = TypeVar("_Row", SourceRun, BronzeTable, Transform)
_LAYER_RANK = {layer: rank for rank, layer in enumerate(LAYERS)}


def finding_sort_key(finding: Finding) -> tuple[str, int, str, str]:
    """Report order: workspace, layer (bronze, silver, gold), subject."""
    return (finding.workspace_id, _LAYER_RANK[finding.layer], finding.subject, finding.kind)


def find_gaps(snapshot: Snapshot, workspace: str | None = None) -> list[Finding]:
    """Return the gap findings of every workspace in ``snapshot``, or of ``workspace`` only.

    :param snapshot: source runs, bronze tables and transforms, of one or many workspaces.
    :param workspace: when given, only this workspace's rows are read.
    :returns: findings sorted by workspace, layer (bronze, silver, gold) and subject.
    """
    runs = _by_workspace(snapshot.source_runs, workspace)
    tables = _by_workspace(snapshot.bronze_tables, workspace)
    transforms = _by_workspace(snapshot.transforms, workspace)
    findings: list[Finding] = []
    for ws in set(runs) | set(tables) | set(transforms):
        findings.extend(_bronze_gaps(ws, runs[ws], tables[ws]))
        findings.extend(_silver_gaps(ws, tables[ws], transforms[ws]))
        findings.extend(_gold_gaps(ws, transforms[ws]))
    findings.sort(key=finding_sort_key)
    return findings


def _by_workspace(rows: Iterable[_Row], workspace: str | None) -> defaultdict[str, list[_Row]]:
    """``rows`` by workspace id (only ``workspace``'s when given)."""
    grouped: defaultdict[str, list[_Row]] = defaultdict(list)
    for row in rows:
        if workspace is None or row.workspace_id == workspace:
            grouped[row.workspace_id].append(row)
    return grouped


def _bronze_gaps(workspace: str, runs: list[SourceRun], tables: list[BronzeTable]) -> Iterable[Finding]:
    latest_ok: dict[str, datetime] = {}
    for run in runs:
        if run.status == "ok" and (
            run.source_id not in latest_ok or run.started_at > latest_ok[run.source_id]
        ):
            latest_ok[run.source_id] = run.started_at
    for table in tables:
        expected = latest_ok.get(table.source_id)
        if not table.selected or expected is None:
            continue
        if table.processed_at is None:
            action = f"Run source '{table.source_id}' to load bronze table '{table.key}', which it has never loaded."
            yield Finding(workspace, "bronze", "missing", table.key, expected, None, action)
        elif table.processed_at < expected:
            action = (
                f"Re-run source '{table.source_id}' to reload bronze table '{table.key}', "
                "last loaded before the source's latest ok run."
            )
            yield Finding(workspace, "bronze", "stale", table.key, expected, table.processed_at, action)


def _silver_gaps(workspace: str, tables: list[BronzeTable], transforms: list[Transform]) -> Iterable[Finding]:
    # An input names a bronze table as "source_id/table" or as a bare "table" (every source's table of
    # that name); both names are indexed to the newest processed_at under them.
    newest: dict[str, datetime] = {}
    newest_any: datetime | None = None
    for table in tables:
        at = table.processed_at
        if at is None:
            continue
        for name in {table.key, table.table}:
            if name not in newest or at > newest[name]:
                newest[name] = at
        if newest_any is None or at > newest_any:
            newest_any = at
    for transform in transforms:
        if transform.layer != "silver":
            continue
        expected = _newest(newest, transform.inputs) if transform.inputs else newest_any
        yield from _transform_gap(workspace, transform, expected, "bronze data loaded after its last run")


def _gold_gaps(workspace: str, transforms: list[Transform]) -> Iterable[Finding]:
    ran: dict[str, datetime] = {
        t.transform_id: t.last_run_at for t in transforms if t.layer == "silver" and t.last_run_at is not None
    }
    newest_any = max(ran.values(), default=None)
    for transform in transforms:
        if transform.layer != "gold":
            continue
        expected = _newest(ran, transform.inputs) if transform.inputs else newest_any
        yield from _transform_gap(workspace, transform, expected, "silver output produced after its last run")


def _newest(index: dict[str, datetime], names: Iterable[str]) -> datetime | None:
    return max((index[name] for name in names if name in index), default=None)


def _transform_gap(
    workspace: str, transform: Transform, expected: datetime | None, inputs: str
) -> Iterable[Finding]:
    if expected is None:
        return
    layer = transform.layer
    if transform.last_run_at is None:
        action = f"Run {layer} transform '{transform.transform_id}', which has never run."
        yield Finding(workspace, layer, "missing", transform.transform_id, expected, None, action)
    elif transform.last_run_at < expected:
        action = f"Re-run {layer} transform '{transform.transform_id}' to pick up {inputs}."
        yield Finding(
            workspace, layer, "stale", transform.transform_id, expected, transform.last_run_at, action
        )
