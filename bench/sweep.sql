-- Statements only the sweep benchmark runs (bench/sweep.py), by name.

-- name: seed_open_letters
-- %(n)s open letters over %(dags)s DAGs, run_<g / dags>, task t: one in ten replaying, one in ten parked, the rest dlq.
INSERT INTO retry_dead_letters (
    dag_id, run_id, task_id, map_index, try_number, attempts_used, max_attempts, work_unit_key,
    failure_class, category, rule, exception_type, message, reason, fingerprint, status
)
SELECT 'dag_' || (g %% %(dags)s), 'run_' || (g / %(dags)s), 't', -1, 1, 1, 3,
       'dag_' || (g %% %(dags)s) || '/t/-1/run=run_' || (g / %(dags)s),
       'poison', 'not-found', 'message-not-found', 'RuntimeError', 'relation "x" not found',
       'seeded', lpad((g %% 997)::text, 16, '0'),
       CASE WHEN g %% 10 = 0 THEN 'replaying' WHEN g %% 10 = 1 THEN 'parked' ELSE 'dlq' END
FROM generate_series(0, %(n)s - 1) AS g;

-- name: seed_cleared_replays
-- Each replaying letter's claim, confirmed cleared (its task instance runs).
INSERT INTO retry_replays (letter_id, actor, reason, fix_version, try_number_before, cleared_at)
SELECT id, 'bench', 'bench', 'v1', 1, now() FROM retry_dead_letters WHERE status = 'replaying';

-- name: open_letters
SELECT dag_id, run_id, task_id, status FROM retry_dead_letters WHERE status IN ('dlq', 'parked', 'replaying');

-- name: count_by_status
SELECT status, count(*) FROM retry_dead_letters GROUP BY status ORDER BY status;

-- name: count_resolved
SELECT count(*) FROM retry_dead_letters WHERE status = 'resolved';
