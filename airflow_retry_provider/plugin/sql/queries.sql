-- The plugin's reads of retry_dead_letters (the pages, the JSON API, the exports), run by plugin/queries.py.
-- The table is the dead-letter queue's (dlq/sql/queries.sql writes it); these only read it.

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
  AND
    -- include: airflow_retry_provider.dlq.sql:letter_filter
  AND (%(before_created)s::timestamptz IS NULL OR (created_at, id) < (%(before_created)s::timestamptz, %(before_id)s::bigint))
ORDER BY created_at DESC, id DESC
LIMIT %(limit)s;

-- name: ui_count_letters
-- How many letters match, counted up to %(cap)s (the page says "10000+" beyond it).
SELECT count(*) FROM (
    SELECT 1 FROM retry_dead_letters
    WHERE dag_id = ANY(%(dag_ids)s::text[])
      AND
        -- include: airflow_retry_provider.dlq.sql:letter_filter
    LIMIT %(cap)s
) capped;

-- name: ui_fingerprint_groups
-- Letters grouped by fingerprint (one root cause each), biggest first, keyset-paginated on
-- (letters DESC, fingerprint); each group carries its newest matching letter as the sample (the
-- sample obeys the group's filters: it is one of the letters counted). NOT MATERIALIZED: the sample's
-- lookup is then an index scan on (fingerprint, created_at) per group of the page; a materialized
-- copy of every matching letter was scanned whole for each group (7 s at 1,000,000 letters).
WITH matching AS NOT MATERIALIZED (
    SELECT id, fingerprint, status, created_at, dag_version_number FROM retry_dead_letters
    WHERE dag_id = ANY(%(dag_ids)s::text[])
      AND
        -- include: airflow_retry_provider.dlq.sql:letter_filter
), grouped AS (
    SELECT fingerprint, count(*) AS letters, count(*) FILTER (WHERE status = 'dlq') AS waiting,
           min(created_at) AS oldest, max(created_at) AS newest,
           -- the DAG versions its letters failed on, and how many letters do not say
           coalesce(array_agg(DISTINCT dag_version_number ORDER BY dag_version_number)
                    FILTER (WHERE dag_version_number IS NOT NULL), '{}') AS versions,
           count(*) FILTER (WHERE dag_version_number IS NULL) AS unknown_versions
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
       page.versions, page.unknown_versions, page.total_groups, page.total_letters,
       deployed.version_number AS deployed_version, deployed.deployed_at,
       sample.id AS sample_id, sample.dag_id, sample.task_id, sample.category, sample.failure_class,
       sample.rule, sample.exception_type, sample.message
FROM page
CROSS JOIN LATERAL (
    SELECT r.id, r.dag_id, r.task_id, r.category, r.failure_class, r.rule, r.exception_type, r.message
    FROM matching m JOIN retry_dead_letters r ON r.id = m.id
    WHERE m.fingerprint = page.fingerprint
    ORDER BY m.created_at DESC, m.id DESC
    LIMIT 1
) sample
-- the newest version of the sample's DAG the sweeper saw (retry_dag_versions): "v5 deployed at ..."
LEFT JOIN retry_dag_versions deployed ON deployed.dag_id = sample.dag_id
ORDER BY page.letters DESC, page.fingerprint;

-- name: ui_letter_of_ti
-- The letter of one task instance (there is at most one), for the task-instance tab.
SELECT * FROM retry_dead_letters
WHERE dag_id = %(dag_id)s AND run_id = %(run_id)s AND task_id = %(task_id)s AND map_index = %(map_index)s;

-- name: export_snapshot
-- An export reads one snapshot: its count (the header) and its rows (the body) agree.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY;

-- name: export_slot
-- One of a user's concurrent-export slots, held until the export's transaction ends (any worker
-- sees it; a dead worker's connection releases it). True if this slot was free.
SELECT pg_try_advisory_xact_lock(hashtextextended(%(name)s, 0)) AS taken;

-- name: ui_export_letters
-- Every letter of the filter in the readable DAGs, newest first, at most %(limit)s: read through a
-- server-side cursor a batch at a time.
SELECT * FROM retry_dead_letters
WHERE dag_id = ANY(%(dag_ids)s::text[])
  AND
    -- include: airflow_retry_provider.dlq.sql:letter_filter
ORDER BY created_at DESC, id DESC
LIMIT %(limit)s;
