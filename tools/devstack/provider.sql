-- Reads of the provider's database that only the tests and the benchmarks ask: devstack/provider.py runs them.

-- name: fix_notices
SELECT * FROM retry_fix_notices ORDER BY dag_id, fingerprint, version_number;

-- name: impact_queue_counts
-- How many letters await their impact, and how many gave up.
SELECT count(*) FILTER (WHERE gave_up_at IS NULL) AS awaiting,
       count(*) FILTER (WHERE gave_up_at IS NOT NULL) AS gave_up
FROM retry_impact_queue;

-- name: infra_letter
-- When the letter of one task of one DAG run that no exception explained was filed, and its class/category.
SELECT created_at, failure_class || '/' || category AS kind
FROM retry_dead_letters
WHERE dag_id = %(dag_id)s AND run_id = %(run_id)s AND failure_class = 'infra';

-- name: failed_tries_count
SELECT count(*) AS tries FROM retry_failed_tries;
