-- 0007: one row per outage of a dependency (issue 28): what the dependency-down and
-- dependency-recovered alerts tell, and the outage history the Dependencies page shows.
-- Written only by breaker/store.py, under the dependency's row lock (retry_breakers FOR UPDATE).

CREATE TABLE IF NOT EXISTS retry_breaker_outages (
    id                BIGSERIAL   PRIMARY KEY,
    dependency        TEXT        NOT NULL,
    opened_at         TIMESTAMPTZ NOT NULL,               -- retry_breakers.opened_at of the outage
    closed_at         TIMESTAMPTZ,                        -- NULL while the outage lasts
    failures_at_open  INTEGER     NOT NULL DEFAULT 0,     -- unwell failures in the window when it opened
    calls_at_open     INTEGER     NOT NULL DEFAULT 0,
    opened_by         TEXT        NOT NULL DEFAULT '',    -- the task instance (or 'user:<name>') that opened it
    opened_reason     TEXT        NOT NULL DEFAULT '',
    tasks_held        INTEGER     NOT NULL DEFAULT 0,     -- task instances held (a task held again after a probe counts again)
    dags_held         TEXT[]      NOT NULL DEFAULT '{}',
    holds             INTEGER     NOT NULL DEFAULT 0,     -- tries held back: each would have spent an attempt
    released          INTEGER     NOT NULL DEFAULT 0,     -- held task instances that ran again
    expired           INTEGER     NOT NULL DEFAULT 0,     -- held past max_hold_seconds: dead-lettered
    probes            INTEGER     NOT NULL DEFAULT 0,
    down_told_at      TIMESTAMPTZ,                        -- the dependency-down alert was queued
    CONSTRAINT retry_breaker_outages_once UNIQUE (dependency, opened_at)
);
CREATE INDEX IF NOT EXISTS retry_breaker_outages_recent ON retry_breaker_outages (dependency, opened_at DESC);
