-- Maintenance: gauges, retention and the work-unit sweeper.

-- name: gauges
-- Every gauge as (name, value) in one round trip; every status appears, with 0 when empty.
SELECT 'letters.' || s.status AS name, count(l.id)::float8 AS value
FROM unnest(ARRAY['dlq', 'replaying', 'resolved', 'parked', 'dismissed']) AS s (status)
LEFT JOIN retry_dead_letters AS l ON l.status = s.status
GROUP BY s.status
UNION ALL
SELECT 'letters.oldest_dlq_age_seconds',
       coalesce(extract(epoch FROM clock_timestamp() - min(created_at)), 0)::float8
FROM retry_dead_letters WHERE status = 'dlq'
UNION ALL
SELECT 'replays.pending', count(*)::float8 FROM retry_replays WHERE outcome = 'pending'
UNION ALL
SELECT 'work_units.lease_expired', count(*)::float8
FROM retry_work_units WHERE status = 'running' AND lease_expires_at < clock_timestamp()
UNION ALL
SELECT 'alerts.pending', count(*)::float8 FROM retry_alerts WHERE status = 'pending'
UNION ALL
SELECT 'connectors.' || s.status, count(h.status)::float8
FROM unnest(ARRAY['healthy', 'degraded', 'failing', 'stopped']) AS s (status)
LEFT JOIN (
    SELECT e ->> 'status' AS status
    FROM (
        SELECT DISTINCT ON (workspace_id) health FROM reconciliation_reports
        ORDER BY workspace_id, as_of DESC, id DESC
    ) AS latest
    CROSS JOIN LATERAL jsonb_array_elements(latest.health) AS e
) AS h ON h.status = s.status
GROUP BY s.status;

-- Retention: each kind of row has a count (for --dry-run) and a bounded batch delete taking
-- %(cutoff)s and %(batch)s; the job repeats a batch, one short transaction each, until it deletes
-- fewer than %(batch)s. dlq, parked and replaying letters are never candidates.

-- name: retention_letters_count
SELECT count(*) FROM retry_dead_letters
WHERE status IN ('resolved', 'dismissed') AND updated_at < %(cutoff)s;

-- name: retention_letters_pick
SELECT id FROM retry_dead_letters
WHERE status IN ('resolved', 'dismissed') AND updated_at < %(cutoff)s
ORDER BY id
LIMIT %(batch)s
FOR UPDATE SKIP LOCKED;

-- name: retention_replays_of_letters_count
SELECT count(*) FROM retry_replays r JOIN retry_dead_letters l ON l.id = r.letter_id
WHERE l.status IN ('resolved', 'dismissed') AND l.updated_at < %(cutoff)s;

-- name: retention_replays_delete
DELETE FROM retry_replays WHERE letter_id = ANY(%(ids)s::bigint[]);

-- name: retention_letters_delete
DELETE FROM retry_dead_letters
WHERE id = ANY(%(ids)s::bigint[]) AND status IN ('resolved', 'dismissed')
RETURNING id;

-- name: retention_reports_count
-- Never a workspace's latest report.
SELECT count(*) FROM reconciliation_reports r
WHERE r.created_at < %(cutoff)s
  AND EXISTS (SELECT 1 FROM reconciliation_reports n
              WHERE n.workspace_id = r.workspace_id AND (n.as_of, n.id) > (r.as_of, r.id));

-- name: retention_findings_count
SELECT count(*) FROM reconciliation_findings f JOIN reconciliation_reports r ON r.id = f.report_id
WHERE r.created_at < %(cutoff)s
  AND EXISTS (SELECT 1 FROM reconciliation_reports n
              WHERE n.workspace_id = r.workspace_id AND (n.as_of, n.id) > (r.as_of, r.id));

-- name: retention_reports_delete
-- Findings go with their report (ON DELETE CASCADE); their count is returned on every row.
WITH doomed AS (
    SELECT r.id FROM reconciliation_reports r
    WHERE r.created_at < %(cutoff)s
      AND EXISTS (SELECT 1 FROM reconciliation_reports n
                  WHERE n.workspace_id = r.workspace_id AND (n.as_of, n.id) > (r.as_of, r.id))
    ORDER BY r.id
    LIMIT %(batch)s
    FOR UPDATE SKIP LOCKED
), findings AS (
    SELECT count(*) AS n FROM reconciliation_findings WHERE report_id IN (SELECT id FROM doomed)
)
DELETE FROM reconciliation_reports
WHERE id IN (SELECT id FROM doomed)
RETURNING workspace_id, as_of, (SELECT n FROM findings);

-- name: retention_events_count
SELECT count(*) FROM extraction_events WHERE started_at < %(cutoff)s;

-- name: retention_events_delete
-- In id order: the primary key finds the oldest rows first and skips what earlier batches deleted.
DELETE FROM extraction_events
WHERE id IN (SELECT id FROM extraction_events WHERE started_at < %(cutoff)s ORDER BY id LIMIT %(batch)s);

-- name: retention_ledger_count
-- Finished units only, and never one still inside its dedup window.
SELECT count(*) FROM retry_work_units
WHERE status IN ('succeeded', 'failed') AND coalesce(finished_at, updated_at) < %(cutoff)s
  AND (dedup_expires_at IS NULL OR dedup_expires_at < clock_timestamp());

-- name: retention_ledger_delete
DELETE FROM retry_work_units
WHERE work_unit_key IN (
    SELECT work_unit_key FROM retry_work_units
    WHERE status IN ('succeeded', 'failed') AND coalesce(finished_at, updated_at) < %(cutoff)s
      AND (dedup_expires_at IS NULL OR dedup_expires_at < clock_timestamp())
    LIMIT %(batch)s
    FOR UPDATE SKIP LOCKED
);

-- name: retention_alerts_count
SELECT count(*) FROM retry_alerts WHERE status IN ('sent', 'dropped') AND created_at < %(cutoff)s;

-- name: retention_alerts_delete
DELETE FROM retry_alerts
WHERE id IN (SELECT id FROM retry_alerts
             WHERE status IN ('sent', 'dropped') AND created_at < %(cutoff)s LIMIT %(batch)s);

-- name: retention_windows_count
SELECT count(*) FROM retry_alert_windows WHERE pending_count = 0 AND last_alert_at < %(cutoff)s;

-- name: retention_windows_delete
DELETE FROM retry_alert_windows
WHERE key IN (SELECT key FROM retry_alert_windows
              WHERE pending_count = 0 AND last_alert_at < %(cutoff)s LIMIT %(batch)s);

-- name: retention_delivery_alerts_count
-- A delivery told at risk or lost (issue 48) whose deadline is past the cut-off: nothing left to deduplicate.
SELECT count(*) FROM retry_delivery_alerts WHERE deadline < %(cutoff)s;

-- name: retention_delivery_alerts_delete
DELETE FROM retry_delivery_alerts
WHERE (fingerprint, delivery, deadline, status) IN (
    SELECT fingerprint, delivery, deadline, status FROM retry_delivery_alerts
    WHERE deadline < %(cutoff)s LIMIT %(batch)s);

-- name: retention_tries_count
SELECT count(*) FROM retry_failed_tries WHERE recorded_at < %(cutoff)s;

-- name: retention_tries_delete
-- The oldest first, by the index on recorded_at (0016).
DELETE FROM retry_failed_tries
WHERE (dag_id, run_id, task_id, map_index, try_number) IN (
    SELECT dag_id, run_id, task_id, map_index, try_number FROM retry_failed_tries
    WHERE recorded_at < %(cutoff)s ORDER BY recorded_at LIMIT %(batch)s);

-- name: record_retention_run
INSERT INTO retry_retention_runs (started_at, cutoffs, deleted)
VALUES (%(started_at)s, %(cutoffs)s, %(deleted)s)
RETURNING id;

-- The work-unit sweeper.

-- name: stale_unit_keys
-- Units left running past their lease whose next sweep is due, oldest lease first.
SELECT work_unit_key FROM retry_work_units
WHERE status = 'running' AND lease_expires_at < clock_timestamp()
  AND (next_sweep_at IS NULL OR next_sweep_at <= clock_timestamp())
ORDER BY lease_expires_at
LIMIT %(limit)s;

-- name: lock_stale_unit
-- The same conditions, re-checked under the row lock: a worker that took the unit over meanwhile wins.
SELECT * FROM retry_work_units
WHERE work_unit_key = %(key)s AND status = 'running' AND lease_expires_at < clock_timestamp()
  AND (next_sweep_at IS NULL OR next_sweep_at <= clock_timestamp())
FOR UPDATE SKIP LOCKED;

-- name: sweeper_finish_unit
UPDATE retry_work_units SET
    status = %(status)s,
    result_ref = CASE WHEN %(status)s = 'succeeded' THEN %(result_ref)s::jsonb ELSE result_ref END,
    error = %(error)s,
    finished_at = clock_timestamp(),
    lease_expires_at = NULL,
    dedup_expires_at = CASE WHEN %(status)s = 'succeeded'
        THEN clock_timestamp() + make_interval(secs => %(dedup_seconds)s::double precision) END,
    next_sweep_at = NULL,
    updated_at = clock_timestamp()
WHERE work_unit_key = %(key)s;

-- name: sweeper_park_unit
UPDATE retry_work_units SET status = 'parked', error = %(error)s, next_sweep_at = NULL,
    sweep_attempts = %(attempts)s, updated_at = clock_timestamp()
WHERE work_unit_key = %(key)s;

-- name: sweeper_later
UPDATE retry_work_units SET sweep_attempts = %(attempts)s, error = coalesce(%(error)s, error),
    next_sweep_at = clock_timestamp() + make_interval(secs => %(delay_seconds)s::double precision),
    updated_at = clock_timestamp()
WHERE work_unit_key = %(key)s;

-- name: insert_unit_history
INSERT INTO retry_work_unit_history (work_unit_key, actor, action, detail)
VALUES (%(key)s, 'work-sweeper', %(action)s, %(detail)s);

-- name: unit_history
SELECT at, actor, action, detail FROM retry_work_unit_history
WHERE work_unit_key = %(key)s ORDER BY at, id;
