-- Reconciliation trails and reports. Idempotent: safe to run any number of times.
-- Every table has workspace_id, and every query in queries.sql filters by it.
-- Ids are text so that rows map one to one onto the models; timestamps are timestamptz.

-- The lock dlq/sql's schema init takes too: two concurrent inits do not race (re-entrant).
SELECT pg_advisory_xact_lock(7311001);

-- One extraction run of a source. Only the latest 'ok' run per source sets expectations.
CREATE TABLE IF NOT EXISTS source_runs (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id  text        NOT NULL,
    source_id     text        NOT NULL,
    status        text        NOT NULL CONSTRAINT source_runs_status CHECK (status IN ('ok', 'failed', 'running')),
    started_at    timestamptz NOT NULL,
    finished_at   timestamptz
);
-- The latest run per source (DISTINCT ON), and the workspace list (loose index scan).
CREATE INDEX IF NOT EXISTS source_runs_by_source ON source_runs (workspace_id, source_id, started_at DESC);

-- A bronze table a source loads; processed_at is null until it is first loaded.
CREATE TABLE IF NOT EXISTS bronze_tables (
    workspace_id  text        NOT NULL,
    source_id     text        NOT NULL,
    table_name    text        NOT NULL,   -- selected AS "table" for the model
    selected      boolean     NOT NULL DEFAULT true,
    processed_at  timestamptz,
    PRIMARY KEY (workspace_id, source_id, table_name)
);

-- A silver or gold transform. inputs: 'source_id/table' or 'table' (silver); silver ids (gold);
-- empty means every bronze table (silver) or every silver transform (gold) of the workspace.
CREATE TABLE IF NOT EXISTS transforms (
    workspace_id  text        NOT NULL,
    transform_id  text        NOT NULL,
    layer         text        NOT NULL CONSTRAINT transforms_layer CHECK (layer IN ('silver', 'gold')),
    inputs        text[]      NOT NULL DEFAULT '{}',
    last_run_at   timestamptz,
    PRIMARY KEY (workspace_id, transform_id)
);

-- An event's finish, started_at + duration_ms. IMMUTABLE is true here, although timestamptz + interval
-- is only STABLE in general: an interval of milliseconds has no day or month part, so the result
-- does not depend on the session's time zone. It lets finished_at be a stored column with an index.
CREATE OR REPLACE FUNCTION reconciliation_event_finish(started_at timestamptz, duration_ms integer)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT started_at + duration_ms * interval '1 millisecond' $$;

-- One operation of a connector run; a run is (workspace_id, connector_id, run_id).
-- finished_at is computed by PostgreSQL: writers never set it.
CREATE TABLE IF NOT EXISTS extraction_events (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id  text        NOT NULL,
    connector_id  text        NOT NULL,
    run_id        text        NOT NULL,
    operation     text        NOT NULL,
    started_at    timestamptz NOT NULL,
    duration_ms   integer     NOT NULL CONSTRAINT extraction_events_duration CHECK (duration_ms >= 0),
    status        text        NOT NULL CONSTRAINT extraction_events_status CHECK (status IN ('ok', 'error')),
    finished_at   timestamptz GENERATED ALWAYS AS (reconciliation_event_finish(started_at, duration_ms)) STORED
);
-- The events finished by as_of that a Python health computation fetches (load_event_log).
CREATE INDEX IF NOT EXISTS extraction_events_by_finish ON extraction_events (workspace_id, finished_at);
-- connector_health reads the workspaces' events in this order, index-only: runs are aggregated
-- without a sort.
CREATE INDEX IF NOT EXISTS extraction_events_by_run
    ON extraction_events (workspace_id, connector_id, run_id) INCLUDE (started_at, finished_at, status);

-- Optional: connectors that should be running (listed as 'stopped' when silent).
CREATE TABLE IF NOT EXISTS expected_connectors (
    workspace_id  text NOT NULL,
    connector_id  text NOT NULL,
    PRIMARY KEY (workspace_id, connector_id)
);

-- One report per workspace and as_of (a re-run of the same as_of replaces it); history is kept.
CREATE TABLE IF NOT EXISTS reconciliation_reports (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id    text        NOT NULL,
    as_of           timestamptz NOT NULL,
    window_seconds  double precision NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    findings_count  integer     NOT NULL,
    new_findings    integer     NOT NULL DEFAULT 0,  -- findings absent from the previous report
    health          jsonb       NOT NULL DEFAULT '[]',  -- ConnectorHealth.to_dict() per connector
    summary         text        NOT NULL DEFAULT '',  -- the Markdown summary
    CONSTRAINT reconciliation_reports_as_of UNIQUE (workspace_id, as_of)
);
-- Latest report per workspace and history, newest first (the unique constraint's index also serves).
CREATE INDEX IF NOT EXISTS reconciliation_reports_newest
    ON reconciliation_reports (workspace_id, as_of DESC, id DESC);

-- The findings of a report, one per (layer, subject).
CREATE TABLE IF NOT EXISTS reconciliation_findings (
    report_id       bigint      NOT NULL REFERENCES reconciliation_reports (id) ON DELETE CASCADE,
    workspace_id    text        NOT NULL,
    layer           text        NOT NULL CONSTRAINT reconciliation_findings_layer
                                CHECK (layer IN ('bronze', 'silver', 'gold')),
    kind            text        NOT NULL CONSTRAINT reconciliation_findings_kind CHECK (kind IN ('missing', 'stale')),
    subject         text        NOT NULL,
    expected_after  timestamptz NOT NULL,
    observed_at     timestamptz,
    action          text        NOT NULL,
    PRIMARY KEY (report_id, layer, subject)
);
-- Findings over time per workspace (charts: open findings per layer).
CREATE INDEX IF NOT EXISTS reconciliation_findings_by_workspace
    ON reconciliation_findings (workspace_id, report_id);
