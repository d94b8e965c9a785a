-- 0002: replay jobs, claim leases and the letters' history (issue 14). Idempotent, like 0001.

-- A replay job: who asked, from where, why, which letters, and how far it got. Any process may
-- drive it; the one holding the lease (lease_owner until lease_until) is the only one that does.
CREATE TABLE IF NOT EXISTS retry_replay_jobs (
    id                  BIGSERIAL PRIMARY KEY,
    actor               TEXT        NOT NULL,
    actor_verified      BOOLEAN     NOT NULL,
    os_user             TEXT,
    source              TEXT        NOT NULL,
    reason              TEXT        NOT NULL,
    fix_version         TEXT        NOT NULL,
    processing_version  TEXT,
    downstream          BOOLEAN     NOT NULL DEFAULT true,
    dag_ids             TEXT[]      NOT NULL,
    status              TEXT        NOT NULL DEFAULT 'queued',
    lease_owner         TEXT,
    lease_until         TIMESTAMPTZ,
    created_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    started_at          TIMESTAMPTZ,
    finished_at         TIMESTAMPTZ,
    cancelled_by        TEXT,
    CONSTRAINT retry_replay_jobs_status CHECK (status IN ('queued', 'running', 'done', 'cancelled')),
    CONSTRAINT retry_replay_jobs_source CHECK (source IN ('ui', 'cli', 'api'))
);
CREATE INDEX IF NOT EXISTS retry_replay_jobs_open ON retry_replay_jobs (id) WHERE status IN ('queued', 'running');

-- One row per letter of a job, in the order the job works through them; outcome 'pending' until
-- the driver has done it. The counts per outcome are read from here.
CREATE TABLE IF NOT EXISTS retry_replay_job_items (
    job_id      BIGINT      NOT NULL REFERENCES retry_replay_jobs (id),
    position    INTEGER     NOT NULL,
    letter_id   BIGINT      NOT NULL,
    outcome     TEXT        NOT NULL DEFAULT 'pending',
    replay_id   BIGINT,
    detail      TEXT,
    done_at     TIMESTAMPTZ,
    PRIMARY KEY (job_id, position),
    CONSTRAINT retry_replay_job_items_outcome CHECK (
        outcome IN ('pending', 'cleared', 'clear-failed', 'unknown', 'refused', 'included', 'cancelled')
    )
);

-- A replay's claim carries a lease; clear_sent_at is when the clear went to Airflow (the pace
-- counts these). Outcomes: 'unknown' (the clear's answer was lost), 'abandoned' (no clear happened
-- before the lease expired).
ALTER TABLE retry_replays ADD COLUMN IF NOT EXISTS job_id BIGINT;
ALTER TABLE retry_replays ADD COLUMN IF NOT EXISTS source TEXT NOT NULL DEFAULT 'cli';
ALTER TABLE retry_replays ADD COLUMN IF NOT EXISTS actor_verified BOOLEAN NOT NULL DEFAULT true;
ALTER TABLE retry_replays ADD COLUMN IF NOT EXISTS os_user TEXT;
ALTER TABLE retry_replays ADD COLUMN IF NOT EXISTS downstream BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE retry_replays ADD COLUMN IF NOT EXISTS lease_until TIMESTAMPTZ;
ALTER TABLE retry_replays ADD COLUMN IF NOT EXISTS clear_sent_at TIMESTAMPTZ;
ALTER TABLE retry_replays DROP CONSTRAINT IF EXISTS retry_replays_outcome;
ALTER TABLE retry_replays ADD CONSTRAINT retry_replays_outcome CHECK (
    outcome IN ('pending', 'succeeded', 'failed', 'clear-failed', 'unknown', 'abandoned')
);
CREATE INDEX IF NOT EXISTS retry_replays_clear_sent ON retry_replays (clear_sent_at)
    WHERE clear_sent_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS retry_replays_open ON retry_replays (lease_until)
    WHERE outcome IN ('pending', 'unknown');

-- The history of every letter, append-only: no foreign key (a purged letter keeps its events),
-- and a trigger refuses UPDATE and DELETE.
CREATE TABLE IF NOT EXISTS retry_letter_events (
    id              BIGSERIAL PRIMARY KEY,
    letter_id       BIGINT      NOT NULL,
    event           TEXT        NOT NULL,
    at              TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    actor           TEXT,
    actor_verified  BOOLEAN     NOT NULL DEFAULT true,
    os_user         TEXT,
    source          TEXT        NOT NULL,
    reason          TEXT,
    job_id          BIGINT,
    replay_id       BIGINT,
    try_number      INTEGER,
    CONSTRAINT retry_letter_events_event CHECK (event IN (
        'filed', 'refiled', 'claimed', 'cleared', 'clear-failed', 'unknown', 'resolved', 'failed-again',
        'parked', 'dismissed', 'purged', 'lease-expired', 'cancelled'
    )),
    CONSTRAINT retry_letter_events_source CHECK (
        source IN ('callback', 'sweeper', 'ui', 'cli', 'api', 'driver')
    )
);
CREATE INDEX IF NOT EXISTS retry_letter_events_letter ON retry_letter_events (letter_id, id);

CREATE OR REPLACE FUNCTION retry_letter_events_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'retry_letter_events is append-only (% refused)', TG_OP;
END;
$$;
DROP TRIGGER IF EXISTS retry_letter_events_append_only ON retry_letter_events;
CREATE TRIGGER retry_letter_events_append_only BEFORE UPDATE OR DELETE ON retry_letter_events
    FOR EACH ROW EXECUTE FUNCTION retry_letter_events_append_only();
