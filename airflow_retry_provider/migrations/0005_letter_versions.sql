-- 0005: the DAG version and bundle version a letter's task instance ran (issue 29, item 1).
-- All nullable: letters filed before this migration, and task instances whose version Airflow no
-- longer has, keep NULL ("unknown"), never a guess.

ALTER TABLE retry_dead_letters
    ADD COLUMN IF NOT EXISTS dag_version_id     TEXT,     -- Airflow's dag_version UUID (worker and REST API)
    ADD COLUMN IF NOT EXISTS dag_version_number INTEGER,  -- its version_number (REST API; the sweeper fills it in)
    ADD COLUMN IF NOT EXISTS bundle_name        TEXT,
    ADD COLUMN IF NOT EXISTS bundle_version     TEXT;     -- NULL for a bundle that is not versioned (local)

-- the sweeper looks up the numbers of letters filed by a worker, which knows only the UUID
CREATE INDEX IF NOT EXISTS retry_dead_letters_version_unresolved
    ON retry_dead_letters (dag_id) WHERE dag_version_id IS NOT NULL AND dag_version_number IS NULL;
