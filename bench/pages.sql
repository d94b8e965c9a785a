-- Statements only the pages benchmark runs (bench/pages.py), by name.

-- name: seed_letters
-- %(n)s letters over 300 DAGs (7 tasks each), 60 days and 500 root causes, the biggest causes the
-- most common (a storm's cause holds thousands of letters, most causes a handful): one in ten still
-- waits in dlq, one in twenty is parked, the rest were resolved or dismissed.
INSERT INTO retry_dead_letters (
    dag_id, run_id, task_id, map_index, try_number, attempts_used, max_attempts, work_unit_key,
    data_interval_start, data_interval_end, workspace_id, failure_class, category, rule,
    exception_type, message, reason, fingerprint, status, replay_count, dag_version_number,
    created_at, updated_at
)
SELECT 'dag_' || (g %% 300), 'scheduled__' || (g / 300), 'task_' || (g %% 7), -1, 3, 3, 3,
       'ws-' || (g %% 25) || '/dag_' || (g %% 300) || '/' || (g / 300),
       at - interval '1 day', at, 'ws-' || (g %% 25),
       (ARRAY['poison', 'retryable', 'unknown'])[1 + cause %% 3],
       (ARRAY['not-found', 'timeout', 'rate-limit', 'schema', 'auth'])[1 + cause %% 5],
       'rule-' || (cause %% 40), 'Error' || (cause %% 13),
       'failure ' || cause || ': upstream answered 503 for job ' || g, 'retries exhausted',
       lpad(to_hex(cause), 16, '0'),
       CASE WHEN g %% 20 = 0 THEN 'parked' WHEN g %% 10 = 1 THEN 'dlq'
            WHEN g %% 10 IN (2, 3) THEN 'dismissed' ELSE 'resolved' END,
       g %% 3, 1 + g %% 4, at, at
FROM generate_series(1, %(n)s) AS g,
     LATERAL (SELECT now() - g * (interval '60 days' / %(n)s) AS at,
                     floor(500 * power((g %% 1009) / 1009.0, 3))::int AS cause) AS shape;

-- name: seed_impacts
-- Every seeded letter's impact as the impact thread stores it (policy/impact.py's Impact.to_json):
-- one blocked task, the DAG's delivery "publish" due at 09:00 UTC the day after the letter, at risk.
INSERT INTO retry_letter_impacts (letter_id, impact, computed_at)
SELECT l.id,
       jsonb_build_object(
           'blocked_tasks', jsonb_build_object('count', 1, 'first', jsonb_build_array('publish')),
           'assets', jsonb_build_object('count', 0, 'first', '[]'::jsonb),
           'consumer_dags', jsonb_build_object('count', 0, 'first', '[]'::jsonb),
           'workspaces', jsonb_build_object('count', 1, 'first', jsonb_build_array(l.workspace_id)),
           'deliveries', jsonb_build_array(jsonb_build_object(
               'dag_id', l.dag_id, 'task_id', 'publish',
               'deadline', to_char(due AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"'),
               'path_seconds', 600,
               'latest_replay', to_char((due - interval '10 minutes') AT TIME ZONE 'UTC',
                                        'YYYY-MM-DD"T"HH24:MI:SS"+00:00"'),
               'status', 'at-risk',
               'unestimated', jsonb_build_object('count', 0, 'first', '[]'::jsonb))),
           'delivery_count', 1),
       l.created_at
FROM retry_dead_letters l,
     LATERAL (SELECT date_trunc('day', l.created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
                     + interval '1 day 9 hours' AS due) AS d
WHERE l.dag_id LIKE 'dag\_%%';

-- name: analyze
ANALYZE retry_dead_letters, retry_letter_impacts;

-- name: count_seeded
SELECT count(*) FROM retry_dead_letters WHERE dag_id LIKE 'dag\_%%';

-- name: count_dag
SELECT count(*) FROM retry_dead_letters WHERE dag_id = %(dag_id)s;
