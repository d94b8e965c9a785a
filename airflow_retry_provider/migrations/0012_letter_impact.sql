-- 0012: what a dead letter blocks and which deliveries it puts at risk (issue 48). One row per
-- letter, written when the letter is filed (the failure callback, when it can reach Airflow's
-- REST API) and refreshed by the dead-letter sweeper while the letter is open: the blocked tasks,
-- assets, consumer DAGs and workspaces (counts and the first names) and each delivery's latest
-- replay time, as JSON (policy/impact.py's Impact.to_json). retry_delivery_alerts remembers each
-- delivery-at-risk (or lost) alert told, once per root cause, delivery, deadline and status.
-- (0011 is another change's number.)

CREATE TABLE IF NOT EXISTS retry_letter_impacts (
    letter_id   BIGINT      PRIMARY KEY REFERENCES retry_dead_letters (id) ON DELETE CASCADE,
    impact      JSONB       NOT NULL,
    computed_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE IF NOT EXISTS retry_delivery_alerts (
    fingerprint TEXT        NOT NULL,
    delivery    TEXT        NOT NULL,
    deadline    TIMESTAMPTZ NOT NULL,
    status      TEXT        NOT NULL,
    letter_id   BIGINT      NOT NULL,
    told_at     TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (fingerprint, delivery, deadline, status)
);
