-- 0004: a circuit breaker per dependency of the capacity map (issue 28): its state, the rolling
-- window of calls it trips on, and the history of its transitions (automatic and forced).

-- One row per dependency; every change is made under this row's lock (SELECT ... FOR UPDATE).
CREATE TABLE IF NOT EXISTS retry_breakers (
    dependency        TEXT        PRIMARY KEY,
    status            TEXT        NOT NULL DEFAULT 'closed',
    cooldown_seconds  INTEGER     NOT NULL DEFAULT 0,
    opened_at         TIMESTAMPTZ,                    -- when the current outage began
    probe_at          TIMESTAMPTZ,                    -- open: when the next probe may start
    probe_key         TEXT,                           -- half-open: dag/run/task/map of the probe
    probe_until       TIMESTAMPTZ,                    -- half-open: when the probe's claim lapses
    forced            TEXT,                           -- 'open' or 'closed' when a person forced it
    failures_at_open  INTEGER     NOT NULL DEFAULT 0,
    updated_at        TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT retry_breakers_status CHECK (status IN ('closed', 'open', 'half-open')),
    CONSTRAINT retry_breakers_forced CHECK (forced IS NULL OR forced IN ('open', 'closed'))
);

-- Calls in buckets of 10 seconds: a busy dependency costs one row per bucket, not per call.
CREATE TABLE IF NOT EXISTS retry_breaker_calls (
    dependency  TEXT        NOT NULL,
    bucket      TIMESTAMPTZ NOT NULL,
    failures    INTEGER     NOT NULL DEFAULT 0,
    calls       INTEGER     NOT NULL DEFAULT 0,
    PRIMARY KEY (dependency, bucket)
);

-- Each transition: who made it (a task, a person, the sweeper), from what to what, and why.
CREATE TABLE IF NOT EXISTS retry_breaker_events (
    id           BIGSERIAL   PRIMARY KEY,
    dependency   TEXT        NOT NULL,
    at           TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    from_status  TEXT        NOT NULL,
    to_status    TEXT        NOT NULL,
    actor        TEXT        NOT NULL,                -- a task instance, 'user:<name>' or 'sweeper'
    reason       TEXT        NOT NULL
);
CREATE INDEX IF NOT EXISTS retry_breaker_events_dependency ON retry_breaker_events (dependency, at DESC);

-- Tasks held by an open breaker: one row per task instance while it waits (removed when it runs).
CREATE TABLE IF NOT EXISTS retry_breaker_holds (
    dependency   TEXT        NOT NULL,
    ti_key       TEXT        NOT NULL,                -- dag/run/task/map
    held_since   TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    held_until   TIMESTAMPTZ NOT NULL,
    holds        INTEGER     NOT NULL DEFAULT 1,
    PRIMARY KEY (dependency, ti_key)
);
