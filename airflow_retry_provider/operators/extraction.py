"""Extraction with one trail event per operation: connector, run, operation, start, duration, ok/error.

:class:`ExtractionRecorder` is the building block (``with recorder.operation("list_tables"): ...``);
:class:`PostgresExtractionOperator` runs named SQL operations against a source and records a
source run (``source_runs``: running, then ok or failed) and one ``extraction_events`` row per
operation. Each event is committed on its own, so the ``error`` event of a failed operation
survives the failure; the connector health of the reconciliation DAG reads them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from airflow_retry_provider.identity import remote_job_id
from airflow_retry_provider.operators.medallion import MedallionOperator, ReadsSource, now
from airflow_retry_provider.sql import transaction


class ExtractionRecorder:
    """Records the operations of one connector run as extraction events.

    :param hook: the hook of the database holding the trails (``RetryProviderHook()``).
    :param workspace_id: the workspace.
    :param connector_id: the connector.
    :param run_id: the connector run the events belong to.
    :param clock: returns "now" (aware); tests pass their own.
    """

    def __init__(
        self,
        hook: Any,
        *,
        workspace_id: str,
        connector_id: str,
        run_id: str,
        clock: Callable[[], datetime] = now,
    ) -> None:
        self.hook = hook
        self.workspace_id = workspace_id
        self.connector_id = connector_id
        self.run_id = run_id
        self.clock = clock
        self.events: list[tuple[str, str, int]] = []

    @contextmanager
    def operation(self, name: str) -> Iterator[None]:
        """Time the block and record one event: ``ok``, or ``error`` (and re-raise) if it raises."""
        started_at, began = self.clock(), time.monotonic()
        status = "error"
        try:
            yield
            status = "ok"
        finally:
            self.record(name, started_at, int((time.monotonic() - began) * 1000), status)

    def record(self, operation: str, started_at: datetime, duration_ms: int, status: str) -> None:
        """Write one event in a transaction of its own."""
        from airflow_retry_provider.reconciliation.trails import record_extraction_event

        with transaction(self.hook.get_conn()) as conn:
            record_extraction_event(
                conn,
                workspace_id=self.workspace_id,
                connector_id=self.connector_id,
                run_id=self.run_id,
                operation=operation,
                started_at=started_at,
                duration_ms=duration_ms,
                status=status,
            )
        self.events.append((operation, status, duration_ms))


def connector_run_id(context: Mapping[str, Any], connector_id: str, version: str | None = None) -> str:
    """The connector run of this try: the unit's remote job id plus ``-try<n>`` (each try is a run)."""
    prefix = "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in connector_id) or "connector"
    try_number = getattr(context.get("ti"), "try_number", 1)
    return f"{remote_job_id(context, prefix, version)}-try{try_number}"


class PostgresExtractionOperator(ReadsSource, MedallionOperator):
    """Run named SQL operations against a source, recording a source run and one event per operation.

    :param connector_id: the connector in the trails (templated).
    :param operations: operation name -> SQL (templated); ``%(start)s`` / ``%(end)s`` are the
        data interval. Run in order; the first error stops the run.
    :param source_conn_id: the connection to extract from (default: ``conn_id``).
    :param source_id: the source in ``source_runs`` (default: ``connector_id``) (templated).
    """

    template_fields: Sequence[str] = ("connector_id", "operations", "source_id", "workspace_id")
    template_fields_renderers = {"operations": "json"}

    def __init__(
        self,
        *,
        connector_id: str,
        operations: Mapping[str, str],
        source_conn_id: str | None = None,
        source_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        if not operations:
            raise ValueError("operations must name at least one SQL operation")
        super().__init__(**kwargs)
        self.connector_id = connector_id
        self.operations = dict(operations)
        self.source_conn_id = source_conn_id
        self.source_id = source_id

    def execute(self, context: Any) -> Any:
        return self.run_idempotent(context, lambda: self.extract(context))

    def extract(self, context: Mapping[str, Any]) -> dict[str, int]:
        """Record a running source run, run each operation as an event, finish the run ok or failed."""
        from airflow_retry_provider.reconciliation import trails

        source_id = self.source_id or self.connector_id
        recorder = ExtractionRecorder(
            self.hook,
            workspace_id=self.workspace_id,
            connector_id=self.connector_id,
            run_id=connector_run_id(context, self.connector_id, self.version),
        )
        with transaction(self.hook.get_conn()) as conn:
            run = trails.record_source_run(
                conn, workspace_id=self.workspace_id, source_id=source_id, status="running", started_at=now()
            )
        params = {"start": context.get("data_interval_start"), "end": context.get("data_interval_end")}
        counts: dict[str, int] = {}
        status = "failed"
        try:
            with transaction(self.source_hook.get_conn()) as source:
                cursor = source.cursor()
                for name, statement in self.operations.items():
                    with recorder.operation(name):
                        cursor.execute(statement, params)
                        counts[name] = (
                            len(cursor.fetchall()) if cursor.description else max(cursor.rowcount, 0)
                        )
            status = "ok"
        finally:
            with transaction(self.hook.get_conn()) as conn:
                trails.finish_source_run(
                    conn, workspace_id=self.workspace_id, run_id=run, status=status, finished_at=now()
                )
        self.log.info("extraction %s run %s: %s", self.connector_id, recorder.run_id, counts)
        return counts
