-- 0013: letters awaiting their impact (issue 58). The failure callback no longer asks Airflow's REST
-- API what a letter blocks: filing a letter (created or changed) queues it here in the same
-- transaction and notifies the channel retry_provider_filed; the api-server plugin's impact thread
-- (woken by that NOTIFY, or by its poll) computes the impacts once per DAG run and deletes the rows.
-- A row whose impact cannot be computed is retried under a lease (attempts counts the claims) and,
-- after the last attempt, keeps its reason with gave_up_at set; the dead-letter sweeper's refresh then
-- computes it like any letter without an impact. A row with gave_up_at NULL is awaiting its impact.
CREATE TABLE IF NOT EXISTS retry_impact_queue (
    letter_id   BIGINT      PRIMARY KEY REFERENCES retry_dead_letters (id) ON DELETE CASCADE,
    queued_at   TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    attempts    INTEGER     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    lease_until TIMESTAMPTZ,
    last_error  TEXT,
    gave_up_at  TIMESTAMPTZ
);

CREATE INDEX IF NOT EXISTS retry_impact_queue_due ON retry_impact_queue (queued_at) WHERE gave_up_at IS NULL;
