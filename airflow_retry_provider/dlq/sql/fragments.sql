-- Clauses several statements share, written once: a statement includes one with a line of its
-- own, "-- include: airflow_retry_provider.dlq.sql:<name>" (sql.py replaces it when the file loads).

-- name: letter_filter
-- The letter filter, on retry_dead_letters (unaliased): one clause per filter of LETTER_FILTERS
-- (dlq/filters.py, where the CLI's flags and the pages' query parameters come from), each naming
-- its one parameter. Used by dlq:list_letters and the plugin's ui_list_letters, ui_count_letters,
-- ui_fingerprint_groups and ui_export_letters: a new filter is one clause here and its declaration
-- there (tests/unit/dlq/test_filters.py holds the two together).
(%(dag_id)s::text IS NULL OR dag_id = %(dag_id)s)
  AND (%(task_id)s::text IS NULL OR task_id = %(task_id)s)
  AND (%(category)s::text IS NULL OR category = %(category)s)
  AND (%(failure_class)s::text IS NULL OR failure_class = %(failure_class)s)
  AND (%(status)s::text IS NULL OR status = %(status)s)
  AND (%(fingerprint)s::text IS NULL OR fingerprint = %(fingerprint)s)
  AND (%(workspace_id)s::text IS NULL OR workspace_id = %(workspace_id)s)
  AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
  AND (%(until)s::timestamptz IS NULL OR created_at < %(until)s)
  AND (%(ids)s::bigint[] IS NULL OR id = ANY(%(ids)s))
  AND (NOT %(newer_version)s::boolean OR EXISTS (
        SELECT 1 FROM retry_dag_versions v
        WHERE v.dag_id = retry_dead_letters.dag_id AND v.version_number > retry_dead_letters.dag_version_number))
