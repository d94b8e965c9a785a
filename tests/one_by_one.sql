-- The statements only the reference sweep of tests/one_by_one.py runs.

-- name: resting_letters_due
-- Letters at rest (dlq, parked) not looked at since %(since)s, longest unlooked-at first, stamped as
-- looked at: the sweeper asks Airflow once per letter whether its task instance succeeded since.
WITH due AS (
    SELECT id FROM retry_dead_letters
    WHERE status IN ('dlq', 'parked') AND (checked_at IS NULL OR checked_at < %(since)s)
      AND (%(dag_ids)s::text[] IS NULL OR dag_id = ANY(%(dag_ids)s::text[]))
    ORDER BY checked_at NULLS FIRST, id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE retry_dead_letters l SET checked_at = clock_timestamp() FROM due WHERE l.id = due.id
RETURNING l.*;
