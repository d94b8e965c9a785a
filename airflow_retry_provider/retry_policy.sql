-- The retry policy's statements (retry_policy.py): the failed tries of a managed task.

-- name: bound_statement
SET LOCAL statement_timeout = '3s';

-- name: record_try_and_count_code_failures
-- Records this try (its code failed: poison, retryable, unknown) once, and counts the earlier tries
-- of its generation that the code failed. A try with no row, or an infra row (the watcher's), ended
-- with no exception. The count reads the table as it was before this statement's insert.
WITH recorded AS (
    INSERT INTO retry_failed_tries
        (dag_id, run_id, task_id, map_index, try_number, failure_class, category, hostname)
    VALUES
        (%(dag_id)s, %(run_id)s, %(task_id)s, %(map_index)s, %(try_number)s,
         %(failure_class)s, %(category)s, %(hostname)s)
    ON CONFLICT (dag_id, run_id, task_id, map_index, try_number) DO NOTHING
)
SELECT count(*) AS code_failures
FROM retry_failed_tries
WHERE dag_id = %(dag_id)s
  AND run_id = %(run_id)s
  AND task_id = %(task_id)s
  AND map_index = %(map_index)s
  AND try_number >= %(first_try)s
  AND try_number < %(try_number)s
  AND failure_class <> 'infra';
