-- Every try of every task of one DAG run, straight from Airflow's metadata database, for the
-- demo, the tests and the benchmarks (the REST API carries no retry delay). One statement per schema:
-- devstack/metadata.py picks the one the database has.

-- name: has_try_history
-- Airflow 3.3 keeps earlier tries in task_instance_history; 3.4 keeps every try in task_instance.
SELECT to_regclass('task_instance_history') IS NOT NULL;

-- name: run_tries_33
SELECT task_id, map_index, try_number, state, start_date, end_date, retry_delay_override, retry_reason
FROM task_instance_history h
WHERE dag_id = %(dag_id)s AND run_id = %(run_id)s
  AND try_number <> (SELECT t.try_number FROM task_instance t
                    WHERE t.dag_id = h.dag_id AND t.run_id = h.run_id
                      AND t.task_id = h.task_id AND t.map_index = h.map_index)
UNION ALL
SELECT task_id, map_index, try_number, state, start_date, end_date, retry_delay_override, retry_reason
FROM task_instance
WHERE dag_id = %(dag_id)s AND run_id = %(run_id)s
ORDER BY task_id, map_index, try_number;

-- name: run_tries_34
-- Every try is a row (the live one with working_set TRUE, archived ones NULL); the table names
-- the map index region_index. The row made for the next try copies the try before it (times,
-- delay, reason) until it starts: shown without them. A try archived for a retry reads failed.
SELECT task_id, region_index AS map_index, try_number,
       CASE WHEN working_set IS NULL AND NOT carried AND state = 'up_for_retry' THEN 'failed'
            ELSE state END AS state,
       CASE WHEN carried THEN NULL ELSE start_date END AS start_date,
       CASE WHEN carried THEN NULL ELSE end_date END AS end_date,
       CASE WHEN carried THEN NULL ELSE retry_delay_override END AS retry_delay_override,
       CASE WHEN carried THEN NULL ELSE retry_reason END AS retry_reason
FROM (
    SELECT *, coalesce(start_date = lag(start_date) OVER (
                  PARTITION BY task_id, region_id, region_index ORDER BY try_number), false) AS carried
    FROM task_instance
    WHERE dag_id = %(dag_id)s AND run_id = %(run_id)s
) attempts
ORDER BY task_id, map_index, try_number;

-- name: run_task_instances_33
SELECT id::text AS id, task_id, map_index, state, try_number, start_date
FROM task_instance
WHERE dag_id = %(dag_id)s AND run_id = %(run_id)s
ORDER BY task_id, map_index;

-- name: run_task_instances_34
-- The live try of each task instance only (archived tries have working_set NULL).
SELECT id::text AS id, task_id, region_index AS map_index, state, try_number, start_date
FROM task_instance
WHERE dag_id = %(dag_id)s AND run_id = %(run_id)s AND working_set IS TRUE
ORDER BY task_id, map_index;
