-- Statements only the dead-letter benchmark runs (bench/dlq.py), by name.

-- name: raw_insert
-- The anchor: one plain single-row insert, no conflict handling.
INSERT INTO bench_raw (dag_id, run_id, task_id, map_index, try_number, message)
VALUES (%(dag_id)s, %(run_id)s, %(task_id)s, %(map_index)s, %(try_number)s, %(message)s);

-- name: create_raw_table
CREATE TABLE IF NOT EXISTS bench_raw (
    id BIGSERIAL PRIMARY KEY, dag_id TEXT NOT NULL, run_id TEXT NOT NULL, task_id TEXT NOT NULL,
    map_index INTEGER NOT NULL, try_number INTEGER NOT NULL, message TEXT NOT NULL
);

-- name: truncate_letters
TRUNCATE retry_replays, retry_dead_letters RESTART IDENTITY;

-- name: count_letters
SELECT count(*), count(DISTINCT (dag_id, run_id, task_id, map_index)) FROM retry_dead_letters;

-- name: seed_letters
-- %(n)s letters over 200 DAGs and 90 days; one in ten still waits in dlq, the rest are closed.
INSERT INTO retry_dead_letters (
    dag_id, run_id, task_id, map_index, try_number, attempts_used, max_attempts, work_unit_key,
    failure_class, category, rule, exception_type, message, reason, fingerprint, status, created_at, updated_at
)
SELECT 'dag_' || (g %% 200), 'run_' || (g / 200), 'task_' || (g %% 7), -1, 1, 1, 3,
       'dag_' || (g %% 200) || '/task_' || (g %% 7) || '/-1/run=run_' || (g / 200),
       'poison', 'not-found', 'message-not-found', 'RuntimeError', 'relation "x" not found',
       'seeded', lpad((g %% 997)::text, 16, '0'),
       CASE WHEN (g / 200) %% 10 = 0 THEN 'dlq' WHEN (g / 200) %% 10 = 1 THEN 'parked' ELSE 'resolved' END,
       now() - (g * interval '7.776 seconds'), now() - (g * interval '7.776 seconds')
FROM generate_series(1, %(n)s) AS g;

-- name: analyze_letters
ANALYZE retry_dead_letters;

-- name: drop_letter_indexes
-- A bulk load is faster without the secondary indexes; migration 0001 (idempotent) creates them again.
DROP INDEX IF EXISTS retry_dead_letters_newest, retry_dead_letters_dag_status,
    retry_dead_letters_status_newest, retry_dead_letters_fingerprint;
