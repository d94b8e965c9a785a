-- The Deliveries view and the sweeper's delivery watch (issue 48): run by dlq/deliveries.py only.
-- Every delivery lives in a letter's stored impact (retry_letter_impacts.impact->'deliveries',
-- policy/impact.py's Delivery.to_json); the letters that block it are the rows that name it.

-- name: delivery_blockers
-- Each (delivery, letter) pair whose deadline falls in [start, end], with the letter's status and
-- when its newest replay cleared it (NULL: no replay, or its clear not confirmed yet). Bounded.
-- Only the impacts whose last deadline is at or after start are expanded (an index scan of
-- retry_letter_impacts_last_deadline, migration 0015), not every impact ever stored.
SELECT l.id AS letter_id, l.dag_id AS letter_dag_id, l.run_id, l.task_id AS letter_task_id,
       l.status, l.fingerprint, l.updated_at,
       d.value->>'dag_id' AS dag_id, d.value->>'task_id' AS task_id,
       d.value->>'deadline' AS deadline, d.value->>'latest_replay' AS latest_replay,
       r.cleared_at
FROM retry_letter_impacts i
JOIN retry_dead_letters l ON l.id = i.letter_id
CROSS JOIN LATERAL jsonb_array_elements(i.impact->'deliveries') AS d(value)
LEFT JOIN LATERAL (
    SELECT rp.cleared_at FROM retry_replays rp
    WHERE rp.letter_id = l.id
    ORDER BY rp.requested_at DESC, rp.id DESC
    LIMIT 1
) r ON true
WHERE retry_impact_last_deadline(i.impact) >= %(start)s
  AND (d.value->>'deadline')::timestamptz >= %(start)s
  AND (d.value->>'deadline')::timestamptz < %(end)s
ORDER BY (d.value->>'deadline')::timestamptz, d.value->>'dag_id', d.value->>'task_id', l.id
LIMIT %(limit)s;

-- name: letters_past_latest_replay
-- Open letters (dlq, parked) with a delivery still stored at-risk whose latest replay time has
-- passed: the sweeper turns it lost and tells it, without asking Airflow. Bounded.
SELECT l.*
FROM retry_dead_letters l
JOIN retry_letter_impacts i ON i.letter_id = l.id
WHERE l.status IN ('dlq', 'parked')
  AND EXISTS (
      SELECT 1 FROM jsonb_array_elements(i.impact->'deliveries') AS d(value)
      WHERE d.value->>'status' = 'at-risk'
        AND (d.value->>'latest_replay')::timestamptz < %(now)s
  )
ORDER BY l.id
LIMIT %(limit)s;

-- name: told_at_risk_not_settled
-- Deliveries told at risk (retry_delivery_alerts) with a deadline in [start, end], told neither
-- lost nor saved since, for the same root cause: the candidates for a "delivery saved" note.
SELECT t.fingerprint, t.delivery, t.deadline, t.letter_id
FROM retry_delivery_alerts t
WHERE t.status = 'at-risk'
  AND t.deadline >= %(start)s AND t.deadline < %(end)s
  AND NOT EXISTS (
      SELECT 1 FROM retry_delivery_alerts o
      WHERE o.fingerprint = t.fingerprint AND o.delivery = t.delivery AND o.deadline = t.deadline
        AND o.status IN ('lost', 'saved')
  )
ORDER BY t.deadline, t.delivery, t.fingerprint
LIMIT %(limit)s;

-- name: group_impacts
-- The stored impacts of the letters still in the way (dlq, parked, replaying) of each root cause
-- in %(fingerprints)s, in the DAGs %(dag_ids)s: the newest %(per_group)s letters of each, each
-- distinct impact once with how many of those letters hold it (a storm's letters of one DAG run
-- share one impact: read and summed once, not once per letter). As text: the caller parses it with
-- json.loads, a quarter of the time psycopg's jsonb loader took for the thousands a page can read.
SELECT fingerprint, impact::text AS impact, count(*) AS letters FROM (
    SELECT l.fingerprint, i.impact,
           row_number() OVER (PARTITION BY l.fingerprint ORDER BY l.id DESC) AS position
    FROM retry_dead_letters l
    JOIN retry_letter_impacts i ON i.letter_id = l.id
    WHERE l.fingerprint = ANY(%(fingerprints)s)
      AND l.dag_id = ANY(%(dag_ids)s)
      AND l.status IN ('dlq', 'parked', 'replaying')
) ranked
WHERE position <= %(per_group)s
GROUP BY fingerprint, impact
ORDER BY fingerprint;

-- name: held_tasks
-- The task instances a dependency's breaker holds now (retry_breaker_holds.ti_key is
-- dag/run/task/map), the longest held first: the Dependencies page asks what deliveries they put
-- at risk. Bounded.
SELECT ti_key, held_since FROM retry_breaker_holds
WHERE dependency = %(dependency)s AND held_until > clock_timestamp()
ORDER BY held_since, ti_key
LIMIT %(limit)s;
