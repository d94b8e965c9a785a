"""Example: a daily bronze -> silver -> gold pipeline in Brasília time on the provider's database.

Every task is a ledger work unit keyed by the data interval, writes the medallion trails the
reconciliation DAG reads, and retries by failure class:

* ``prepare`` creates what the pipeline needs (its source table with the interval's rows, the
  layer tables, the ledger and trail tables) idempotently, so it runs on an empty database, and
  registers the pipeline's transforms in the trails, so that the reconciliation expects each one
  (a transform that never succeeds is a gap);
* ``extract_positions`` records one extraction event per operation (kill switch ``ingestion``);
* ``load_bronze_positions`` replaces the interval's rows in bronze; in this demo its first try
  loses the connection *after* the rows were committed, and the retry (two seconds later)
  replaces them: exactly one copy (kill switch ``ingestion``);
* ``silver_positions`` and ``gold_exposure`` are versioned SQL transforms;
* ``gold_risk_report`` is poison: it reads a table that does not exist, runs once, and lands
  in the dead-letter queue (kill switch ``reports``), so a run of this DAG ends ``failed``.
  "Deploying the fix" is setting the Variable ``example_risk_report_fixed`` to ``yes``: it then
  reads silver, and a replay of its letter (with downstream) completes the run;
* ``publish_risk_report`` announces the report: it runs only after the report succeeded.

Connection: ``retry_provider_default``. No database access at parse time.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pendulum
from airflow.sdk import DAG, CronDataIntervalTimetable, task

from airflow_retry_provider import apply_profile
from airflow_retry_provider.capacity import apply_capacity, example_dependencies_path, load_dependencies
from airflow_retry_provider.operators import (
    PostgresBronzeLoadOperator,
    PostgresExtractionOperator,
    SqlTransformOperator,
)
from airflow_retry_provider.policy import Backoff

BRASILIA = "America/Sao_Paulo"
WORKSPACE = "demo"
CONNECTOR = "positions_api"
BRONZE = "example_bronze_positions"
# A short backoff so that the demo's transient failure recovers within seconds.
FAST = Backoff(base=timedelta(seconds=2), multiplier=2, cap=timedelta(seconds=10), jitter=0.25)

TABLES_SQL = """
CREATE TABLE IF NOT EXISTS example_positions_source (
    id bigint PRIMARY KEY, book text NOT NULL, amount numeric NOT NULL, traded_at timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS example_bronze_positions (  -- no key on purpose: a double load would show
    id bigint NOT NULL, book text NOT NULL, amount numeric NOT NULL, traded_at timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS example_silver_positions (
    interval_start timestamptz NOT NULL, book text NOT NULL, amount numeric NOT NULL, version text,
    PRIMARY KEY (interval_start, book)
);
CREATE TABLE IF NOT EXISTS example_gold_exposure (
    interval_start timestamptz PRIMARY KEY, amount numeric NOT NULL, books integer NOT NULL, version text
);
"""

# Five trades of the interval (ids derived from it, so a second run inserts nothing new).
SOURCE_ROWS_SQL = """
INSERT INTO example_positions_source (id, book, amount, traded_at)
SELECT (extract(epoch FROM %(start)s::timestamptz)::bigint / 60) * 10 + n,
       (ARRAY['rates', 'fx', 'equities'])[1 + n %% 3],
       100 * (n + 1),
       %(start)s::timestamptz + make_interval(hours => n + 1)
FROM generate_series(0, 4) AS n
ON CONFLICT (id) DO NOTHING
"""

# The Variable only picks one of two fixed table names: no Variable value reaches the SQL text.
RISK_REPORT_SQL = (
    "SELECT book, amount FROM {{ 'example_silver_positions' "
    "if var.value.get('example_risk_report_fixed', 'no') == 'yes' else 'positions_v2_missing' }} "
    "WHERE interval_start = %(start)s"
)
INTERVAL_ROWS = "FROM example_positions_source WHERE traded_at >= %(start)s AND traded_at < %(end)s"


class DemoFlakyBronzeLoad(PostgresBronzeLoadOperator):
    """Demo only: the first try loses its connection right after its rows were committed."""

    def load(self, context: Any) -> dict[str, Any]:
        result = super().load(context)
        if context["ti"].try_number == 1:
            raise ConnectionResetError(104, "Connection reset by peer (demo: after the rows were written)")
        return result


with DAG(
    dag_id="example_retry_pipeline",
    description="Bronze -> silver -> gold for one day of positions, 07:00 Brasília time.",
    schedule=CronDataIntervalTimetable("0 7 * * *", timezone=BRASILIA),
    start_date=pendulum.datetime(2026, 11, 1, tz=BRASILIA),
    catchup=False,
    max_active_runs=1,
    tags=["airflow-retry-provider", "example"],
) as dag:

    @task
    def prepare(data_interval_start=None, data_interval_end=None) -> int:
        """Create the provider's, the trails' and the pipeline's tables, and the interval's source rows."""
        from contextlib import closing

        from airflow_retry_provider.dlq.schema import apply_schema
        from airflow_retry_provider.hooks.retry_provider import RetryProviderHook
        from airflow_retry_provider.reconciliation.trails import record_transform

        with closing(RetryProviderHook().get_conn()) as conn:
            apply_schema(conn)  # every provider table: dead letters, ledger, trails
            cursor = conn.cursor()
            cursor.execute(TABLES_SQL)
            cursor.execute(SOURCE_ROWS_SQL, {"start": data_interval_start})
            inserted = cursor.rowcount
            for transform in (silver, gold, risk_report):  # registered, not marked run
                record_transform(
                    conn,
                    workspace_id=WORKSPACE,
                    transform_id=transform.transform_id,
                    layer=transform.layer,
                    inputs=transform.inputs,
                )
            conn.commit()
        return inserted

    extract = PostgresExtractionOperator(
        task_id="extract_positions",
        connector_id=CONNECTOR,
        operations={
            "count_trades": "SELECT count(*) " + INTERVAL_ROWS,
            "list_books": "SELECT DISTINCT book " + INTERVAL_ROWS,
        },
        workspace_id=WORKSPACE,
        kill_switch="ingestion",
    )
    load = DemoFlakyBronzeLoad(
        task_id="load_bronze_positions",
        table=BRONZE,
        source_sql="SELECT id, book, amount, traded_at " + INTERVAL_ROWS,
        interval_column="traded_at",
        source_id=CONNECTOR,
        workspace_id=WORKSPACE,
        kill_switch="ingestion",
    )
    silver = SqlTransformOperator(
        task_id="silver_positions",
        layer="silver",
        inputs=[f"{CONNECTOR}/{BRONZE}"],
        version="v1",
        sql=[
            "DELETE FROM example_silver_positions WHERE interval_start = %(start)s",
            "INSERT INTO example_silver_positions (interval_start, book, amount, version) "
            "SELECT %(start)s, book, sum(amount), %(version)s FROM example_bronze_positions "
            "WHERE traded_at >= %(start)s AND traded_at < %(end)s GROUP BY book",
        ],
        workspace_id=WORKSPACE,
    )
    gold = SqlTransformOperator(
        task_id="gold_exposure",
        layer="gold",
        inputs=["silver_positions"],
        version="v1",
        sql=[
            "DELETE FROM example_gold_exposure WHERE interval_start = %(start)s",
            "INSERT INTO example_gold_exposure (interval_start, amount, books, version) "
            "SELECT %(start)s, sum(amount), count(*), %(version)s FROM example_silver_positions "
            "WHERE interval_start = %(start)s",
        ],
        workspace_id=WORKSPACE,
    )
    risk_report = SqlTransformOperator(
        task_id="gold_risk_report",
        layer="gold",
        inputs=["silver_positions"],
        sql=RISK_REPORT_SQL,
        workspace_id=WORKSPACE,
        kill_switch="reports",
    )

    @task
    def publish_risk_report(data_interval_start=None) -> str:
        """Announce the interval's risk report (only once the report succeeded)."""
        return f"risk report of {data_interval_start} published"

    # The positions database takes one heavy extraction or two light ones at a time
    # (airflow_retry_provider/dependencies.example.yaml; `airflow-retry pools sync` creates the pool).
    dependencies = load_dependencies(example_dependencies_path())
    apply_capacity(extract, "positions_db", "light", dependencies=dependencies)
    apply_capacity(load, "positions_db", "heavy", dependencies=dependencies)

    prepare() >> extract >> load >> silver >> [gold, risk_report]
    risk_report >> publish_risk_report()
    for operator in (extract, load, silver, gold, risk_report):
        apply_profile(operator, "report", backoff=FAST)
