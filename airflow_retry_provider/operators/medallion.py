"""Medallion operators on PostgreSQL: a bronze load that replaces one data interval, and SQL transforms.

Each one is a unit of work of the ledger (``identity.work_unit_key`` plus its ``version``), may
declare the shared ``dependency`` it uses (a pool, checked at parse time), may be stopped by a
kill switch, and writes the medallion trails in the same transaction as its data:

* :class:`PostgresBronzeLoadOperator` -> ``bronze_tables`` (``processed_at``);
* :class:`SqlTransformOperator` -> ``transforms`` (``layer``, ``inputs``, ``last_run_at``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from functools import cached_property
from typing import Any

from airflow.providers.postgres.hooks.postgres import PostgresHook
from airflow.sdk import BaseOperator

from airflow_retry_provider.capacity import CapacityError, DependencyMap, uses
from airflow_retry_provider.hooks.retry_provider import RetryProviderHook
from airflow_retry_provider.kill_switch import KillSwitchMixin
from airflow_retry_provider.ledger.decorator import IdempotentMixin
from airflow_retry_provider.policy import Profile
from airflow_retry_provider.sql import transaction

DEFAULT_CONN_ID = "retry_provider_default"


def sql_module(conn: Any) -> Any:
    """``psycopg.sql`` or ``psycopg2.sql``, whichever matches ``conn``."""
    if type(conn).__module__.startswith("psycopg2"):
        from psycopg2 import sql as psycopg2_sql

        return psycopg2_sql
    from psycopg import sql as psycopg_sql

    return psycopg_sql


def identifier(sql: Any, name: str) -> Any:
    """``schema.table`` or ``table`` as a quoted identifier."""
    return sql.Identifier(*name.split("."))


def data_interval(context: Mapping[str, Any]) -> tuple[datetime, datetime]:
    """The run's data interval; ValueError when the run has none (a run without a logical date)."""
    start, end = context.get("data_interval_start"), context.get("data_interval_end")
    if start is None or end is None:
        raise ValueError(
            "this task loads one data interval, and the run has none: trigger it with a logical date"
        )
    return start, end


def now() -> datetime:
    return datetime.now(timezone.utc)


class MedallionOperator(IdempotentMixin, KillSwitchMixin, BaseOperator):
    """What the medallion operators share: connection, workspace, version, capacity, kill switch, retries.

    :param conn_id: the Airflow connection of the target database, which also holds the ledger
        and the trails (default ``retry_provider_default``).
    :param workspace_id: the workspace of the trail rows (templated).
    :param version: the processing version; a new version is a new work unit (it runs again).
    :param dependency: the shared dependency it uses (sets ``pool``); checked at parse time.
    :param weight: a weight name (``heavy``, ``light``) or a number of slots (sets ``pool_slots``).
    :param dependencies: the dependency map (default: the registered one or
        ``[retry_provider] dependencies_file``).
    :param kill_switch: the kind of work it is (``ingestion``, ``reports``...): skipped while off.
    :param retry_profile: a retry profile to apply (``apply_profile``).
    """

    ui_color = "#f0e4d0"

    def __init__(
        self,
        *,
        conn_id: str = DEFAULT_CONN_ID,
        workspace_id: str = "default",
        version: str | None = None,
        dependency: str | None = None,
        weight: int | str = "light",
        dependencies: DependencyMap | None = None,
        kill_switch: str | None = None,
        retry_profile: str | Profile | None = None,
        **kwargs: Any,
    ) -> None:
        if dependency is not None:
            if "pool" in kwargs or "pool_slots" in kwargs:
                raise CapacityError(
                    f"task {kwargs.get('task_id')!r}: pass dependency= or pool=/pool_slots=, not both"
                )
            kwargs.update(uses(dependency, weight, dependencies=dependencies, task=kwargs.get("task_id")))
        super().__init__(**kwargs)
        self.conn_id = conn_id
        self.workspace_id = workspace_id
        self.version = version
        self.dependency = dependency
        self.weight = weight
        self.kill_switch = kill_switch
        self.idempotency_version = version
        self.ledger_conn_id = conn_id
        if kill_switch is not None:
            from airflow_retry_provider.kill_switch import check_kind

            check_kind(kill_switch)
        if retry_profile is not None:
            from airflow_retry_provider.retry_policy import apply_profile

            apply_profile(self, retry_profile)

    @cached_property
    def hook(self) -> RetryProviderHook:
        return RetryProviderHook(postgres_conn_id=self.conn_id)


class ReadsSource:
    """For operators that read source data: a plain PostgresHook on ``source_conn_id`` (else ``conn_id``).

    Source data is not the provider's tables, so it is read through Airflow's own hook.
    """

    conn_id: str
    source_conn_id: str | None

    @cached_property
    def source_hook(self) -> PostgresHook:
        return PostgresHook(postgres_conn_id=self.source_conn_id or self.conn_id)


class PostgresBronzeLoadOperator(ReadsSource, MedallionOperator):
    """Load one data interval's rows into a bronze table: delete that interval, insert its rows, one transaction.

    Re-running an interval (a retry, a clear, a backfill) replaces its rows and never appends
    them twice. A source row outside the interval is refused (it would escape the delete).

    :param table: the bronze table, ``table`` or ``schema.table`` (templated).
    :param source_sql: a SELECT of the interval's rows; ``%(start)s`` and ``%(end)s`` are the
        interval's bounds (templated).
    :param interval_column: the column holding each row's time, the key range replaced.
    :param source_conn_id: the connection to read from (default: ``conn_id``).
    :param source_id: the source in the trails (default: the table's name).
    """

    template_fields: Sequence[str] = ("table", "source_sql", "workspace_id", "source_id")
    template_ext: Sequence[str] = (".sql",)
    template_fields_renderers = {"source_sql": "sql"}

    def __init__(
        self,
        *,
        table: str,
        source_sql: str,
        interval_column: str,
        source_conn_id: str | None = None,
        source_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.table = table
        self.source_sql = source_sql
        self.interval_column = interval_column
        self.source_conn_id = source_conn_id
        self.source_id = source_id

    def execute(self, context: Any) -> Any:
        return self.run_idempotent(context, lambda: self.load(context))

    def read(self, start: datetime, end: datetime) -> tuple[list[str], list[tuple[Any, ...]]]:
        """The source's rows of ``[start, end)``: column names and rows."""
        with transaction(self.source_hook.get_conn()) as conn:
            cursor = conn.cursor()
            cursor.execute(self.source_sql, {"start": start, "end": end})
            columns = [column[0] for column in cursor.description]
            rows = [
                tuple(row.values()) if isinstance(row, Mapping) else tuple(row) for row in cursor.fetchall()
            ]
        if self.interval_column not in columns:
            raise ValueError(f"source_sql returns no {self.interval_column!r} column (it returns {columns})")
        at = columns.index(self.interval_column)
        outside = [row[at] for row in rows if not (start <= row[at] < end)]
        if outside:
            raise ValueError(
                f"source_sql returned {len(outside)} row(s) outside [{start}, {end}) "
                f"(first: {outside[0]}); they would escape the interval's delete"
            )
        return columns, rows

    def load(self, context: Mapping[str, Any]) -> dict[str, Any]:
        """Replace the interval's rows and mark the bronze table loaded, in one transaction."""
        from airflow_retry_provider.operators.sql import query
        from airflow_retry_provider.reconciliation.trails import record_bronze_table

        start, end = data_interval(context)
        columns, rows = self.read(start, end)
        with transaction(self.hook.get_conn()) as conn:
            sql = sql_module(conn)
            table = identifier(sql, self.table)
            cursor = conn.cursor()
            cursor.execute(
                sql.SQL(query("delete_interval")).format(
                    table=table, column=sql.Identifier(self.interval_column)
                ),
                {"start": start, "end": end},
            )
            deleted = cursor.rowcount
            if rows:
                insert = sql.SQL(query("insert_row")).format(
                    table=table,
                    columns=sql.SQL(", ").join(sql.Identifier(name) for name in columns),
                    values=sql.SQL(", ").join(sql.Placeholder() for _ in columns),
                )
                cursor.executemany(insert, rows)
            record_bronze_table(
                conn,
                workspace_id=self.workspace_id,
                source_id=self.source_id or self.table,
                table=self.table,
                processed_at=now(),
            )
        self.log.info(
            "bronze %s: replaced interval [%s, %s): %d row(s) deleted, %d inserted",
            self.table,
            start,
            end,
            deleted,
            len(rows),
        )
        return {
            "table": self.table,
            "start": str(start),
            "end": str(end),
            "deleted": deleted,
            "rows": len(rows),
        }


class SqlTransformOperator(MedallionOperator):
    """Run a silver or gold SQL transform for one data interval, in one transaction, and record it.

    :param sql: a statement or a list of statements (or a ``.sql`` file) (templated). Parameters
        ``%(start)s``, ``%(end)s`` (the data interval, None without one), ``%(version)s`` and
        ``%(work_unit_key)s`` are available; write a literal ``%`` as ``%%``.
    :param transform_id: the transform's id in the trails (default: the task id).
    :param layer: ``silver`` (reads bronze tables) or ``gold`` (reads silver transforms).
    :param inputs: what it reads, for the trails: bronze tables (``source_id/table``) for silver,
        silver transform ids for gold.
    """

    template_fields: Sequence[str] = ("sql", "workspace_id")
    template_ext: Sequence[str] = (".sql",)
    template_fields_renderers = {"sql": "sql"}

    def __init__(
        self,
        *,
        sql: str | Sequence[str],
        layer: str,
        transform_id: str | None = None,
        inputs: Sequence[str] = (),
        **kwargs: Any,
    ) -> None:
        if layer not in ("silver", "gold"):
            raise ValueError(f"layer must be 'silver' or 'gold', got {layer!r}")
        super().__init__(**kwargs)
        self.sql = sql
        self.layer = layer
        self.transform_id = transform_id or self.task_id
        self.inputs = tuple(inputs)

    def execute(self, context: Any) -> Any:
        return self.run_idempotent(context, lambda: self.transform(context))

    def transform(self, context: Mapping[str, Any]) -> dict[str, Any]:
        """Run the statements and mark the transform run, in one transaction."""
        from airflow_retry_provider.reconciliation.trails import record_transform

        statements = [self.sql] if isinstance(self.sql, str) else list(self.sql)
        params = {
            "start": context.get("data_interval_start"),
            "end": context.get("data_interval_end"),
            "version": self.version,
            "work_unit_key": self.work_unit_key(context),
        }
        rows = 0
        with transaction(self.hook.get_conn()) as conn:
            cursor = conn.cursor()
            for statement in statements:
                cursor.execute(statement, params)
                rows += max(cursor.rowcount, 0)
            record_transform(
                conn,
                workspace_id=self.workspace_id,
                transform_id=self.transform_id,
                layer=self.layer,
                inputs=self.inputs,
                last_run_at=now(),
            )
        self.log.info(
            "%s transform %s (version %s): %d row(s) written",
            self.layer,
            self.transform_id,
            self.version,
            rows,
        )
        return {"transform_id": self.transform_id, "layer": self.layer, "version": self.version, "rows": rows}
