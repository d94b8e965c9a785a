-- The provider's schema. Idempotent: safe to run any number of times.
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
