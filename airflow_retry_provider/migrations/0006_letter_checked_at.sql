-- 0006: when the sweep last asked Airflow about an open letter (issue 25, item 2). The sweep looks
-- at the letters it has not asked about for longest first and stamps each one it asks about, so
-- no set of letters Airflow leaves undecided can starve the others; a sweep's REST calls are
-- bounded by the number of open letters, never by a DAG's history.

ALTER TABLE retry_dead_letters ADD COLUMN IF NOT EXISTS checked_at TIMESTAMPTZ;

CREATE INDEX IF NOT EXISTS retry_dead_letters_open_checked
    ON retry_dead_letters (status, checked_at NULLS FIRST, id) WHERE status IN ('dlq', 'replaying', 'parked');
