-- The idempotent work-unit ledger. Idempotent: safe to run any number of times.
-- One row per work unit (airflow_retry_provider.identity.work_unit_key): who holds it, until when,
-- and what it produced. Times are taken from the database clock (clock_timestamp()), never the worker's.

-- The lock dlq/sql's schema init takes too: two concurrent inits do not race (re-entrant).
SELECT pg_advisory_xact_lock(7311001);

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
