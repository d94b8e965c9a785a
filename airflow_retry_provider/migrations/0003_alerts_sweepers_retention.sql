-- 0002: alerts (outbox, root-cause windows, connector statuses told), the work-unit sweeper's
-- columns, history and 'parked' status, and the record of retention runs (issue 16).

-- One row per message and notifier ("channel"): sent, or waiting for its next attempt.
CREATE TABLE IF NOT EXISTS retry_alerts (
    id               BIGSERIAL   PRIMARY KEY,
    kind             TEXT        NOT NULL,          -- new-root-cause, root-cause-summary, letter-parked, ...
    subject_key      TEXT        NOT NULL,          -- what it is about: a fingerprint, a letter, a unit
    channel          TEXT        NOT NULL,          -- the configured notifier's name
    title            TEXT        NOT NULL,
    body             JSONB       NOT NULL,          -- the message: text, html, links
    status           TEXT        NOT NULL DEFAULT 'pending',
    attempts         INTEGER     NOT NULL DEFAULT 0,
    last_error       TEXT,                          -- redacted, cut to 500 characters
    next_attempt_at  TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    created_at       TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    sent_at          TIMESTAMPTZ,
    CONSTRAINT retry_alerts_status CHECK (status IN ('pending', 'sent', 'dropped'))
);
CREATE INDEX IF NOT EXISTS retry_alerts_due ON retry_alerts (next_attempt_at) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS retry_alerts_created ON retry_alerts (created_at);

-- One row per root cause (fingerprint): when its last message went out and how many letters
-- arrived since, for at most one message per window.
CREATE TABLE IF NOT EXISTS retry_alert_windows (
    key              TEXT        PRIMARY KEY,
    last_alert_at    TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    pending_count    INTEGER     NOT NULL DEFAULT 0,
    last_letter_id   BIGINT,
    updated_at       TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX IF NOT EXISTS retry_alert_windows_due ON retry_alert_windows (last_alert_at) WHERE pending_count > 0;

-- The connector statuses someone was told about (stopped or failing): a change is alerted once,
-- and so is the recovery (the row is deleted then).
CREATE TABLE IF NOT EXISTS retry_alert_connector_status (
    workspace_id  TEXT        NOT NULL,
    connector_id  TEXT        NOT NULL,
    status        TEXT        NOT NULL,
    since         TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (workspace_id, connector_id)
);

-- What each retention run deleted (airflow-retry retention, the retry_provider_retention DAG).
CREATE TABLE IF NOT EXISTS retry_retention_runs (
    id          BIGSERIAL   PRIMARY KEY,
    started_at  TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    cutoffs     JSONB       NOT NULL,   -- table -> the age limit's cut-off (ISO 8601)
    deleted     JSONB       NOT NULL    -- table -> rows deleted
);

-- The work-unit sweeper: a unit may be parked for a person; each sweep of a stale unit waits
-- longer than the last (next_sweep_at), and every sweeper action is kept in the unit's history.
ALTER TABLE retry_work_units ADD COLUMN IF NOT EXISTS sweep_attempts integer NOT NULL DEFAULT 0;
ALTER TABLE retry_work_units ADD COLUMN IF NOT EXISTS next_sweep_at timestamptz;
ALTER TABLE retry_work_units DROP CONSTRAINT retry_work_units_status;
ALTER TABLE retry_work_units ADD CONSTRAINT retry_work_units_status
    CHECK (status IN ('running', 'succeeded', 'failed', 'parked'));

CREATE TABLE IF NOT EXISTS retry_work_unit_history (
    id             BIGSERIAL   PRIMARY KEY,
    work_unit_key  TEXT        NOT NULL,
    at             TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    actor          TEXT        NOT NULL,      -- 'work-sweeper'
    action         TEXT        NOT NULL,      -- completed, failed, parked, waiting, retry-later
    detail         TEXT        NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS retry_work_unit_history_key ON retry_work_unit_history (work_unit_key, at);
