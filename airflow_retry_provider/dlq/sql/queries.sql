-- Every statement the dead-letter store runs, by name. Parameters use %(name)s placeholders.

-- name: insert_letter
INSERT INTO retry_dead_letters (
    dag_id, run_id, task_id, map_index, try_number, attempts_used, max_attempts,
    work_unit_key, data_interval_start, data_interval_end, workspace_id,
    failure_class, category, rule, exception_type, message, reason, fingerprint,
    code_version, payload_ref, filed_by
) VALUES (
    %(dag_id)s, %(run_id)s, %(task_id)s, %(map_index)s, %(try_number)s, %(attempts_used)s, %(max_attempts)s,
    %(work_unit_key)s, %(data_interval_start)s, %(data_interval_end)s, %(workspace_id)s,
    %(failure_class)s, %(category)s, %(rule)s, %(exception_type)s, %(message)s, %(reason)s, %(fingerprint)s,
    %(code_version)s, %(payload_ref)s, %(filed_by)s
)
ON CONFLICT (dag_id, run_id, task_id, map_index) DO NOTHING
RETURNING id;

-- name: lock_letter_by_ti
SELECT id, status, replay_count, try_number
FROM retry_dead_letters
WHERE dag_id = %(dag_id)s AND run_id = %(run_id)s AND task_id = %(task_id)s AND map_index = %(map_index)s
FOR UPDATE;

-- name: refile_letter
UPDATE retry_dead_letters SET
    try_number = %(try_number)s, attempts_used = %(attempts_used)s, max_attempts = %(max_attempts)s,
    failure_class = %(failure_class)s, category = %(category)s, rule = %(rule)s,
    exception_type = %(exception_type)s, message = %(message)s, reason = %(reason)s,
    fingerprint = %(fingerprint)s, code_version = %(code_version)s, payload_ref = %(payload_ref)s,
    filed_by = %(filed_by)s, status = %(status)s, status_reason = %(status_reason)s,
    replay_count = %(replay_count)s, updated_at = now()
WHERE id = %(id)s;

-- name: finish_pending_replays
UPDATE retry_replays SET outcome = %(outcome)s, outcome_at = now(), detail = %(detail)s
WHERE letter_id = %(letter_id)s AND outcome = 'pending';

-- name: resolve_replaying_letter
UPDATE retry_dead_letters SET status = 'resolved', status_reason = %(status_reason)s, updated_at = now()
WHERE dag_id = %(dag_id)s AND run_id = %(run_id)s AND task_id = %(task_id)s AND map_index = %(map_index)s
  AND status = 'replaying'
RETURNING id;

-- name: get_letter
SELECT * FROM retry_dead_letters WHERE id = %(id)s;

-- name: list_letters
-- Keyset pagination, newest first: pass the last row's (created_at, id) as (before_created, before_id).
SELECT * FROM retry_dead_letters
WHERE (%(dag_id)s::text IS NULL OR dag_id = %(dag_id)s)
  AND (%(task_id)s::text IS NULL OR task_id = %(task_id)s)
  AND (%(category)s::text IS NULL OR category = %(category)s)
  AND (%(failure_class)s::text IS NULL OR failure_class = %(failure_class)s)
  AND (%(status)s::text IS NULL OR status = %(status)s)
  AND (%(fingerprint)s::text IS NULL OR fingerprint = %(fingerprint)s)
  AND (%(workspace_id)s::text IS NULL OR workspace_id = %(workspace_id)s)
  AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
  AND (%(until)s::timestamptz IS NULL OR created_at < %(until)s)
  AND (%(ids)s::bigint[] IS NULL OR id = ANY(%(ids)s))
  AND (%(before_created)s::timestamptz IS NULL OR (created_at, id) < (%(before_created)s::timestamptz, %(before_id)s::bigint))
ORDER BY created_at DESC, id DESC
LIMIT %(limit)s;

-- name: claim_for_replay
-- Of concurrent replays of one letter exactly one gets a row back.
UPDATE retry_dead_letters SET status = 'replaying', status_reason = %(status_reason)s, updated_at = now()
WHERE id = %(id)s AND status = 'dlq' AND replay_count < %(replay_cap)s
RETURNING id, try_number;

-- name: insert_replay
INSERT INTO retry_replays (letter_id, actor, reason, fix_version, processing_version, try_number_before)
VALUES (%(letter_id)s, %(actor)s, %(reason)s, %(fix_version)s, %(processing_version)s, %(try_number_before)s)
RETURNING id;

-- name: mark_replay_cleared
UPDATE retry_replays SET cleared_at = now(), detail = %(detail)s WHERE id = %(id)s;

-- name: release_failed_claim
-- The clear did not happen: the letter goes back to the queue and the replay says why.
UPDATE retry_dead_letters SET status = 'dlq', status_reason = %(status_reason)s, updated_at = now()
WHERE id = %(id)s AND status = 'replaying';

-- name: set_status
UPDATE retry_dead_letters SET status = %(status)s, status_reason = %(status_reason)s, updated_at = now()
WHERE id = %(id)s AND status = ANY(%(from_statuses)s)
RETURNING id;

-- name: replays_of_letter
SELECT * FROM retry_replays WHERE letter_id = %(letter_id)s ORDER BY requested_at DESC, id DESC;

-- name: replaying_letters
SELECT * FROM retry_dead_letters WHERE status = 'replaying' ORDER BY updated_at LIMIT %(limit)s;

-- name: letter_exists_for_ti
SELECT id FROM retry_dead_letters
WHERE dag_id = %(dag_id)s AND run_id = %(run_id)s AND task_id = %(task_id)s AND map_index = %(map_index)s
  AND try_number >= %(try_number)s;

-- name: delete_closed_before
-- Retention is explicit: only closed letters (resolved, dismissed) older than the cut-off.
WITH doomed AS (
    SELECT id FROM retry_dead_letters
    WHERE status IN ('resolved', 'dismissed') AND updated_at < %(before)s
)
, gone_replays AS (DELETE FROM retry_replays WHERE letter_id IN (SELECT id FROM doomed))
DELETE FROM retry_dead_letters WHERE id IN (SELECT id FROM doomed)
RETURNING id;

-- The Airflow UI plugin's reads (airflow_retry_provider/plugin/queries.py). Each takes the filters of
-- list_letters plus the parameter dag_ids: the DAGs the signed-in user may read; letters of any other DAG are
-- never returned nor counted.

-- name: ui_letter_dag_ids
-- Every DAG that has letters: a skip scan of the (dag_id, ...) index, a few ms at any table size.
WITH RECURSIVE dags AS (
    (SELECT dag_id FROM retry_dead_letters ORDER BY dag_id LIMIT 1)
    UNION ALL
    SELECT (SELECT r.dag_id FROM retry_dead_letters r WHERE r.dag_id > dags.dag_id ORDER BY r.dag_id LIMIT 1)
    FROM dags WHERE dags.dag_id IS NOT NULL
)
SELECT dag_id FROM dags WHERE dag_id IS NOT NULL;

-- name: ui_list_letters
-- Keyset pagination, newest first, within the readable DAGs.
SELECT * FROM retry_dead_letters
WHERE dag_id = ANY(%(dag_ids)s::text[])
  AND (%(dag_id)s::text IS NULL OR dag_id = %(dag_id)s)
  AND (%(task_id)s::text IS NULL OR task_id = %(task_id)s)
  AND (%(category)s::text IS NULL OR category = %(category)s)
  AND (%(failure_class)s::text IS NULL OR failure_class = %(failure_class)s)
  AND (%(status)s::text IS NULL OR status = %(status)s)
  AND (%(fingerprint)s::text IS NULL OR fingerprint = %(fingerprint)s)
  AND (%(workspace_id)s::text IS NULL OR workspace_id = %(workspace_id)s)
  AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
  AND (%(until)s::timestamptz IS NULL OR created_at < %(until)s)
  AND (%(ids)s::bigint[] IS NULL OR id = ANY(%(ids)s))
  AND (%(before_created)s::timestamptz IS NULL OR (created_at, id) < (%(before_created)s::timestamptz, %(before_id)s::bigint))
ORDER BY created_at DESC, id DESC
LIMIT %(limit)s;

-- name: ui_count_letters
-- How many letters match, counted up to %(cap)s (the page says "10000+" beyond it).
SELECT count(*) FROM (
    SELECT 1 FROM retry_dead_letters
    WHERE dag_id = ANY(%(dag_ids)s::text[])
      AND (%(dag_id)s::text IS NULL OR dag_id = %(dag_id)s)
      AND (%(task_id)s::text IS NULL OR task_id = %(task_id)s)
      AND (%(category)s::text IS NULL OR category = %(category)s)
      AND (%(failure_class)s::text IS NULL OR failure_class = %(failure_class)s)
      AND (%(status)s::text IS NULL OR status = %(status)s)
      AND (%(fingerprint)s::text IS NULL OR fingerprint = %(fingerprint)s)
      AND (%(workspace_id)s::text IS NULL OR workspace_id = %(workspace_id)s)
      AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
      AND (%(until)s::timestamptz IS NULL OR created_at < %(until)s)
      AND (%(ids)s::bigint[] IS NULL OR id = ANY(%(ids)s))
    LIMIT %(cap)s
) capped;

-- name: ui_fingerprint_groups
-- Letters grouped by fingerprint (one root cause each), biggest first, keyset-paginated on
-- (letters DESC, fingerprint); each group carries its newest letter as the sample.
WITH matching AS (
    SELECT fingerprint, status, created_at FROM retry_dead_letters
    WHERE dag_id = ANY(%(dag_ids)s::text[])
      AND (%(dag_id)s::text IS NULL OR dag_id = %(dag_id)s)
      AND (%(task_id)s::text IS NULL OR task_id = %(task_id)s)
      AND (%(category)s::text IS NULL OR category = %(category)s)
      AND (%(failure_class)s::text IS NULL OR failure_class = %(failure_class)s)
      AND (%(status)s::text IS NULL OR status = %(status)s)
      AND (%(fingerprint)s::text IS NULL OR fingerprint = %(fingerprint)s)
      AND (%(workspace_id)s::text IS NULL OR workspace_id = %(workspace_id)s)
      AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
      AND (%(until)s::timestamptz IS NULL OR created_at < %(until)s)
      AND (%(ids)s::bigint[] IS NULL OR id = ANY(%(ids)s))
), grouped AS (
    SELECT fingerprint, count(*) AS letters, count(*) FILTER (WHERE status = 'dlq') AS waiting,
           min(created_at) AS oldest, max(created_at) AS newest
    FROM matching GROUP BY fingerprint
), ranked AS (
    SELECT grouped.*, count(*) OVER () AS total_groups, sum(letters) OVER () AS total_letters
    FROM grouped
), page AS (
    SELECT * FROM ranked
    WHERE %(after_letters)s::bigint IS NULL
       OR letters < %(after_letters)s::bigint
       OR (letters = %(after_letters)s::bigint AND fingerprint > %(after_fingerprint)s::text)
    ORDER BY letters DESC, fingerprint
    LIMIT %(limit)s
)
SELECT page.fingerprint, page.letters, page.waiting, page.oldest, page.newest,
       page.total_groups, page.total_letters,
       sample.id AS sample_id, sample.dag_id, sample.task_id, sample.category, sample.failure_class,
       sample.rule, sample.exception_type, sample.message
FROM page
CROSS JOIN LATERAL (
    SELECT id, dag_id, task_id, category, failure_class, rule, exception_type, message
    FROM retry_dead_letters r
    WHERE r.fingerprint = page.fingerprint AND r.dag_id = ANY(%(dag_ids)s::text[])
    ORDER BY r.created_at DESC
    LIMIT 1
) sample
ORDER BY page.letters DESC, page.fingerprint;

-- name: ui_letter_of_ti
-- The letter of one task instance (there is at most one), for the task-instance tab.
SELECT * FROM retry_dead_letters
WHERE dag_id = %(dag_id)s AND run_id = %(run_id)s AND task_id = %(task_id)s AND map_index = %(map_index)s;
