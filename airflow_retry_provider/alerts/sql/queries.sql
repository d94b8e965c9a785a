-- Alerts: the outbox and the root-cause windows.

-- name: insert_alert
INSERT INTO retry_alerts (kind, subject_key, channel, title, body)
VALUES (%(kind)s, %(subject_key)s, %(channel)s, %(title)s, %(body)s)
RETURNING id;

-- name: open_window
-- The first letter of a root cause: a new window, its message goes out now.
INSERT INTO retry_alert_windows (key, last_letter_id) VALUES (%(key)s, %(letter_id)s)
ON CONFLICT (key) DO NOTHING
RETURNING key;

-- name: lock_window
SELECT pending_count,
       last_alert_at <= clock_timestamp() - make_interval(mins => %(repeat_minutes)s) AS due
FROM retry_alert_windows WHERE key = %(key)s
FOR UPDATE;

-- name: count_in_window
UPDATE retry_alert_windows
SET pending_count = pending_count + 1, last_letter_id = %(letter_id)s, updated_at = clock_timestamp()
WHERE key = %(key)s;

-- name: restart_window
UPDATE retry_alert_windows
SET last_alert_at = clock_timestamp(), pending_count = 0, last_letter_id = %(letter_id)s,
    updated_at = clock_timestamp()
WHERE key = %(key)s;

-- name: claim_due_windows
-- Windows that ended with letters not yet told: each is reset here, in the transaction that
-- queues its summary, so two sweepers never send the same one.
UPDATE retry_alert_windows AS w
SET last_alert_at = clock_timestamp(), pending_count = 0, updated_at = clock_timestamp()
FROM (
    SELECT key, pending_count FROM retry_alert_windows
    WHERE pending_count > 0
      AND last_alert_at <= clock_timestamp() - make_interval(mins => %(repeat_minutes)s)
    ORDER BY last_alert_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
) AS due
WHERE w.key = due.key
RETURNING w.key, due.pending_count, w.last_letter_id;

-- name: claim_due_alerts
-- Pending messages whose time has come (all of them, or only ``ids``), locked for this sender.
SELECT id, kind, subject_key, channel, title, body, attempts
FROM retry_alerts
WHERE status = 'pending' AND next_attempt_at <= clock_timestamp()
  AND (%(ids)s::bigint[] IS NULL OR id = ANY(%(ids)s::bigint[]))
ORDER BY next_attempt_at, id
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- name: mark_alert_sent
UPDATE retry_alerts SET status = 'sent', attempts = attempts + 1, sent_at = clock_timestamp(),
    last_error = NULL
WHERE id = %(id)s;

-- name: mark_alert_failed
UPDATE retry_alerts
SET attempts = attempts + 1, last_error = %(error)s,
    next_attempt_at = clock_timestamp() + make_interval(secs => %(delay_seconds)s)
WHERE id = %(id)s;

-- name: mark_alert_dropped
UPDATE retry_alerts SET status = 'dropped', last_error = %(error)s WHERE id = %(id)s;

-- name: alerts_by_status
SELECT status, count(*) AS n FROM retry_alerts GROUP BY status;

-- name: told_connector_statuses
SELECT connector_id, status FROM retry_alert_connector_status WHERE workspace_id = %(workspace_id)s;

-- name: tell_connector_status
INSERT INTO retry_alert_connector_status (workspace_id, connector_id, status)
VALUES (%(workspace_id)s, %(connector_id)s, %(status)s)
ON CONFLICT (workspace_id, connector_id) DO UPDATE SET status = EXCLUDED.status, since = clock_timestamp();

-- name: forget_connector_status
DELETE FROM retry_alert_connector_status
WHERE workspace_id = %(workspace_id)s AND connector_id = %(connector_id)s;

-- name: tell_delivery
-- Once per root cause, delivery, deadline and status (issue 48): a row back only the first time.
INSERT INTO retry_delivery_alerts (fingerprint, delivery, deadline, status, letter_id)
VALUES (%(fingerprint)s, %(delivery)s, %(deadline)s, %(status)s, %(letter_id)s)
ON CONFLICT DO NOTHING
RETURNING letter_id;
