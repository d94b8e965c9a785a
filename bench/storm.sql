-- Statements only the storm benchmark runs (bench/storm.py), by name. A storm's runs are passed as two
-- arrays of the same length, %(dag_ids)s and %(run_ids)s: the i-th DAG id with the i-th run id.

-- name: provider_connections
-- Connections to the provider database, less the sampler's own.
SELECT count(*) - 1 FROM pg_stat_activity WHERE datname = %(dbname)s;

-- name: runs_ended
-- (metadata database) How many of the storm's runs ended.
SELECT count(*) FROM dag_run
WHERE (dag_id, run_id) IN (SELECT * FROM unnest(%(dag_ids)s::text[], %(run_ids)s::text[]))
  AND state IN ('success', 'failed');

-- name: failing_tries
-- (metadata database) When the storm's first failing try started and its last one ended.
SELECT min(start_date), max(end_date) FROM task_instance
WHERE (dag_id, run_id) IN (SELECT * FROM unnest(%(dag_ids)s::text[], %(run_ids)s::text[]))
  AND task_id = 'load';

-- name: awaiting_impacts
-- The storm's letters still waiting for their impact (and not given up).
SELECT count(*) FROM retry_impact_queue q JOIN retry_dead_letters l ON l.id = q.letter_id
WHERE (l.dag_id, l.run_id) IN (SELECT * FROM unnest(%(dag_ids)s::text[], %(run_ids)s::text[]))
  AND q.gave_up_at IS NULL;

-- name: letters
-- The storm's letters: how many, the last one's filing time, and how many have their impact.
SELECT count(*), max(l.created_at), count(i.letter_id)
FROM retry_dead_letters l LEFT JOIN retry_letter_impacts i ON i.letter_id = l.id
WHERE (l.dag_id, l.run_id) IN (SELECT * FROM unnest(%(dag_ids)s::text[], %(run_ids)s::text[]));
