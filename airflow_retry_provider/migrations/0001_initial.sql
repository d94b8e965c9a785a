-- Migration 0001: the schema as released before versioned migrations.
--
-- Idempotent on purpose (CREATE ... IF NOT EXISTS, ADD COLUMN IF NOT EXISTS): a database created by an
-- earlier release has no version table, and this file brings it to version 1 without touching a row.
-- Later migrations are plain DDL: they run once, recorded in retry_provider_schema_version.

-- ---------------------------------------------------------------- dead letters and replays (dlq/)
-- One letter per task instance; its try_number is the last failed try that was filed.

CREATE TABLE IF NOT EXISTS retry_dead_letters (
    id                   BIGSERIAL PRIMARY KEY,
    dag_id               TEXT        NOT NULL,
    run_id               TEXT        NOT NULL,
    task_id              TEXT        NOT NULL,
    map_index            INTEGER     NOT NULL DEFAULT -1,
    try_number           INTEGER     NOT NULL,
    attempts_used        INTEGER     NOT NULL,
    max_attempts         INTEGER,
    work_unit_key        TEXT        NOT NULL,
    data_interval_start  TIMESTAMPTZ,
    data_interval_end    TIMESTAMPTZ,
    workspace_id         TEXT,
    failure_class        TEXT        NOT NULL,
    category             TEXT        NOT NULL,
    rule                 TEXT        NOT NULL,
    exception_type       TEXT        NOT NULL,
    message              TEXT        NOT NULL,
    reason               TEXT        NOT NULL DEFAULT '',
    fingerprint          TEXT        NOT NULL,
    code_version         TEXT,
    payload_ref          TEXT,
    filed_by             TEXT        NOT NULL DEFAULT 'callback',
    status               TEXT        NOT NULL DEFAULT 'dlq',
    status_reason        TEXT,
    replay_count         INTEGER     NOT NULL DEFAULT 0,
    created_at           TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at           TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT retry_dead_letters_ti UNIQUE (dag_id, run_id, task_id, map_index),
    CONSTRAINT retry_dead_letters_status CHECK (status IN ('dlq', 'replaying', 'resolved', 'parked', 'dismissed')),
    CONSTRAINT retry_dead_letters_class CHECK (failure_class IN ('poison', 'retryable', 'unknown'))
);

-- Keyset pagination, newest first, for the whole queue and per DAG and status.
CREATE INDEX IF NOT EXISTS retry_dead_letters_newest ON retry_dead_letters (created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS retry_dead_letters_dag_status
    ON retry_dead_letters (dag_id, status, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS retry_dead_letters_status_newest
    ON retry_dead_letters (status, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS retry_dead_letters_fingerprint ON retry_dead_letters (fingerprint, created_at DESC);

-- Every replay a person asked for, kept apart from the original failure.
CREATE TABLE IF NOT EXISTS retry_replays (
    id                  BIGSERIAL PRIMARY KEY,
    letter_id           BIGINT      NOT NULL REFERENCES retry_dead_letters (id),
    actor               TEXT        NOT NULL,
    reason              TEXT        NOT NULL,
    fix_version         TEXT        NOT NULL,
    processing_version  TEXT,
    try_number_before   INTEGER     NOT NULL,
    requested_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    cleared_at          TIMESTAMPTZ,
    outcome             TEXT        NOT NULL DEFAULT 'pending',
    outcome_at          TIMESTAMPTZ,
    detail              TEXT,
    CONSTRAINT retry_replays_outcome CHECK (outcome IN ('pending', 'succeeded', 'failed', 'clear-failed'))
);
CREATE INDEX IF NOT EXISTS retry_replays_letter ON retry_replays (letter_id, requested_at DESC);
CREATE INDEX IF NOT EXISTS retry_replays_requested ON retry_replays (requested_at DESC);

-- The Airflow UI's grouped view (plugin/): an index-only scan in fingerprint order over the
-- columns the groups count and filter on, instead of a scan of the whole table.
CREATE INDEX IF NOT EXISTS retry_dead_letters_fingerprint_groups
    ON retry_dead_letters (fingerprint, dag_id, status, created_at);

-- ---------------------------------------------------------------- work-unit ledger (ledger/)
-- One row per work unit (airflow_retry_provider.identity.work_unit_key): who holds it, until when,
-- and what it produced. Times are taken from the database clock (clock_timestamp()), never the worker's.

CREATE TABLE IF NOT EXISTS retry_work_units (
    work_unit_key     text        PRIMARY KEY,
    status            text        NOT NULL
                      CONSTRAINT retry_work_units_status CHECK (status IN ('running', 'succeeded', 'failed')),
    owner             text        NOT NULL,              -- the claim holder: host:pid:token
    owner_ti          text,                              -- dag_id/run_id/task_id/map_index of the holder
    owner_try         integer,                           -- its try number (a later try of it takes over)
    claims            integer     NOT NULL DEFAULT 1,    -- how many times the unit was claimed
    claimed_from      text,                              -- the status the last claim replaced, NULL if new
    remote_job_id     text,                              -- the deterministic id sent to the remote side
    result_ref        jsonb,                             -- what the run returned (a value or a reference)
    error             text,                              -- the last failure, cut to 2000 characters
    claimed_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    lease_expires_at  timestamptz,                       -- a 'running' claim past this may be taken over
    finished_at       timestamptz,
    dedup_expires_at  timestamptz,                       -- a 'succeeded' unit is not run again before this
    created_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at        timestamptz NOT NULL DEFAULT clock_timestamp()
);
-- Added after the first release; a no-op on a table that has it.
ALTER TABLE retry_work_units ADD COLUMN IF NOT EXISTS claimed_from text;

-- No secondary index on purpose: every claim and outcome updates the row, and the primary key
-- is all they need (an index on status or updated_at would make each update write it too).

-- ---------------------------------------------------------------- reconciliation trails and reports (reconciliation/)
-- Every table has workspace_id, and every query in queries.sql filters by it.
-- Ids are text so that rows map one to one onto the models; timestamps are timestamptz.

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
