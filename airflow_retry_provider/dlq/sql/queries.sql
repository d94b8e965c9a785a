-- Every statement the dead-letter store runs, by name. Parameters use %(name)s placeholders.

-- name: insert_letter
INSERT INTO retry_dead_letters (
    dag_id, run_id, task_id, map_index, try_number, attempts_used, max_attempts,
    work_unit_key, data_interval_start, data_interval_end, workspace_id,
    failure_class, category, rule, exception_type, message, reason, fingerprint,
    code_version, payload_ref, filed_by,
    dag_version_id, dag_version_number, bundle_name, bundle_version
) VALUES (
    %(dag_id)s, %(run_id)s, %(task_id)s, %(map_index)s, %(try_number)s, %(attempts_used)s, %(max_attempts)s,
    %(work_unit_key)s, %(data_interval_start)s, %(data_interval_end)s, %(workspace_id)s,
    %(failure_class)s, %(category)s, %(rule)s, %(exception_type)s, %(message)s, %(reason)s, %(fingerprint)s,
    %(code_version)s, %(payload_ref)s, %(filed_by)s,
    %(dag_version_id)s, %(dag_version_number)s, %(bundle_name)s, %(bundle_version)s
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
    replay_count = %(replay_count)s,
    -- the newer try may have run a newer version: its own, or unknown (never the older try's)
    dag_version_id = %(dag_version_id)s, dag_version_number = %(dag_version_number)s,
    bundle_name = %(bundle_name)s, bundle_version = %(bundle_version)s, updated_at = now()
WHERE id = %(id)s;

-- name: finish_pending_replays
-- Closes the letter's open replay: one still waiting ('pending') or whose clear's answer was lost ('unknown').
UPDATE retry_replays SET outcome = %(outcome)s, outcome_at = now(), detail = %(detail)s, lease_until = NULL
WHERE letter_id = %(letter_id)s AND outcome IN ('pending', 'unknown')
RETURNING id, job_id, actor, fix_version;

-- name: resolve_replaying_letter
UPDATE retry_dead_letters SET status = 'resolved', status_reason = %(status_reason)s, updated_at = now()
WHERE dag_id = %(dag_id)s AND run_id = %(run_id)s AND task_id = %(task_id)s AND map_index = %(map_index)s
  AND status = 'replaying'
RETURNING id, try_number;

-- name: get_letter
SELECT * FROM retry_dead_letters WHERE id = %(id)s;

-- name: list_letters
-- Keyset pagination, newest first: pass the last row's (created_at, id) as (before_created, before_id).
SELECT * FROM retry_dead_letters
WHERE
  -- include: airflow_retry_provider.dlq.sql:letter_filter
  AND (%(before_created)s::timestamptz IS NULL OR (created_at, id) < (%(before_created)s::timestamptz, %(before_id)s::bigint))
ORDER BY created_at DESC, id DESC
LIMIT %(limit)s;

-- name: claim_for_replay
-- Of concurrent replays of one letter exactly one gets a row back.
UPDATE retry_dead_letters SET status = 'replaying', status_reason = %(status_reason)s, updated_at = now()
WHERE id = %(id)s AND status = 'dlq' AND replay_count < %(replay_cap)s
RETURNING id, try_number;

-- name: insert_replay
-- The claim's replay row. clear_sent_at is set when this claim is the one whose clear goes to Airflow
-- now (the pace counts those); a letter cleared as a downstream of another's clear has none.
INSERT INTO retry_replays (
    letter_id, actor, reason, fix_version, processing_version, try_number_before,
    job_id, source, actor_verified, os_user, downstream, lease_until, clear_sent_at, cleared_at,
    fingerprint_before
) VALUES (
    %(letter_id)s, %(actor)s, %(reason)s, %(fix_version)s, %(processing_version)s, %(try_number_before)s,
    %(job_id)s, %(source)s, %(actor_verified)s, %(os_user)s, %(downstream)s,
    clock_timestamp() + make_interval(secs => %(lease_seconds)s),
    CASE WHEN %(send)s THEN clock_timestamp() END,
    CASE WHEN %(send)s THEN NULL ELSE clock_timestamp() END,
    (SELECT fingerprint FROM retry_dead_letters WHERE id = %(letter_id)s)
)
RETURNING id;

-- name: mark_replay_cleared
-- Airflow confirmed the clear: no longer mid-clear, so the lease ends. Lands only while the claim is
-- still open and this replay's (no other process abandoned or closed it meanwhile); no row: it was.
UPDATE retry_replays SET cleared_at = now(), detail = %(detail)s, lease_until = NULL
WHERE id = %(id)s AND outcome IN ('pending', 'unknown') AND cleared_at IS NULL
RETURNING id;

-- name: stamp_decided_clear
-- Airflow confirmed a clear whose rerun already ended and decided this replay (its failure or success
-- closed it first: a slow answer): the clear happened, so it is stamped; nothing else changes.
UPDATE retry_replays SET cleared_at = now()
WHERE id = %(id)s AND outcome IN ('failed', 'succeeded') AND cleared_at IS NULL
RETURNING id;

-- name: mark_replay_unknown
-- The clear's answer was lost: the letter stays replaying and the sync decides from Airflow's state.
UPDATE retry_replays SET outcome = 'unknown', outcome_at = now(), detail = %(detail)s
WHERE id = %(id)s AND outcome = 'pending';

-- name: lock_pending_job_item
-- A job's claim lands only while its item is still pending and unclaimed and its job still running:
-- the item's row lock makes a concurrent cancel wait for this claim (and then leave the item alone).
SELECT i.position
FROM retry_replay_job_items i JOIN retry_replay_jobs j ON j.id = i.job_id
WHERE i.job_id = %(job_id)s AND i.position = %(position)s AND i.outcome = 'pending' AND i.replay_id IS NULL
  AND j.status = 'running'
FOR UPDATE OF i FOR SHARE OF j;

-- name: pace_lock
-- One pace for the deployment: every claim that sends a clear takes this lock first.
SELECT pg_advisory_xact_lock(7311014);

-- name: clears_in_window
-- Clears sent in the last 60 seconds by every job and process; how long until the oldest of them
-- leaves the window, and since when the newest was sent (clears are spaced 60/rate seconds apart).
SELECT count(*) AS clears,
       coalesce(min(clear_sent_at) + interval '60 seconds' - clock_timestamp(), interval '0') AS window_wait,
       coalesce(clock_timestamp() - max(clear_sent_at), interval '1 hour') AS since_last
FROM retry_replays
WHERE clear_sent_at > clock_timestamp() - interval '60 seconds';

-- name: claim_of_letter
-- A letter's open replay (the newest one still pending or unknown), if any.
SELECT * FROM retry_replays
WHERE letter_id = %(letter_id)s AND outcome IN ('pending', 'unknown')
ORDER BY id DESC LIMIT 1;

-- name: claim_letter_by_ti
-- A letter whose task instance was cleared with another letter's downstream joins that replay.
UPDATE retry_dead_letters SET status = 'replaying', status_reason = %(status_reason)s, updated_at = now()
WHERE dag_id = %(dag_id)s AND run_id = %(run_id)s AND task_id = %(task_id)s AND map_index = %(map_index)s
  AND status = 'dlq'
RETURNING id, try_number;

-- name: open_claims
-- Letters in replaying whose claim needs a decision: the clear's answer was lost, or the claim's lease
-- expired before the clear was confirmed; not looked at since %(since)s, longest unlooked-at first,
-- stamped as looked at (undecided rows rotate: none can starve the others). Joined with the claim.
WITH due AS (
    SELECT l.id FROM retry_dead_letters l
    JOIN retry_replays r ON r.letter_id = l.id AND r.outcome IN ('pending', 'unknown') AND r.cleared_at IS NULL
    WHERE l.status = 'replaying' AND (r.outcome = 'unknown' OR r.lease_until < clock_timestamp())
      AND (l.checked_at IS NULL OR l.checked_at < %(since)s)
    ORDER BY l.checked_at NULLS FIRST, l.id
    LIMIT %(limit)s
    FOR UPDATE OF l SKIP LOCKED
), stamped AS (
    UPDATE retry_dead_letters l SET checked_at = clock_timestamp() FROM due WHERE l.id = due.id
    RETURNING l.*
)
SELECT s.*, r.id AS replay_id, r.outcome AS replay_outcome, r.try_number_before, r.cleared_at,
       r.requested_at AS replay_requested_at, r.lease_until < clock_timestamp() AS lease_expired
FROM stamped s
JOIN retry_replays r ON r.letter_id = s.id AND r.outcome IN ('pending', 'unknown') AND r.cleared_at IS NULL
ORDER BY s.id;

-- name: reopen_late_clear
-- Airflow confirmed a clear whose claim another process abandoned while it was on its way (its lease
-- expired): the clear happened, so that replay is open again, cleared, and its letter replaying again
-- (its task's end decides it), unless the letter left dlq or has a newer claim meanwhile.
WITH reopened AS (
    UPDATE retry_replays r SET outcome = 'pending', outcome_at = NULL, cleared_at = now(),
        lease_until = NULL, detail = %(detail)s
    WHERE r.id = %(id)s AND r.outcome = 'abandoned' AND r.cleared_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM retry_replays n WHERE n.letter_id = r.letter_id AND n.id > r.id)
      AND EXISTS (SELECT 1 FROM retry_dead_letters l WHERE l.id = r.letter_id AND l.status = 'dlq')
    RETURNING r.letter_id
)
UPDATE retry_dead_letters SET status = 'replaying', status_reason = %(status_reason)s, updated_at = now()
WHERE id IN (SELECT letter_id FROM reopened) AND status = 'dlq'
RETURNING id;

-- name: abandon_claim
-- No clear happened: the replay is closed and the letter goes back to the queue.
WITH closed AS (
    UPDATE retry_replays SET outcome = 'abandoned', outcome_at = now(), detail = %(detail)s, lease_until = NULL
    WHERE id = %(replay_id)s AND outcome IN ('pending', 'unknown') AND cleared_at IS NULL
    RETURNING letter_id
)
UPDATE retry_dead_letters SET status = 'dlq', status_reason = %(detail)s, updated_at = now()
WHERE id IN (SELECT letter_id FROM closed) AND status = 'replaying'
RETURNING id;

-- name: insert_event
INSERT INTO retry_letter_events (
    letter_id, event, actor, actor_verified, os_user, source, reason, job_id, replay_id, try_number
) VALUES (
    %(letter_id)s, %(event)s, %(actor)s, %(actor_verified)s, %(os_user)s, %(source)s, %(reason)s,
    %(job_id)s, %(replay_id)s, %(try_number)s
);

-- name: events_of_letter
SELECT * FROM retry_letter_events WHERE letter_id = %(letter_id)s ORDER BY id;

-- name: resolve_dlq_letter
-- The task instance of a letter at rest succeeded outside a replay (cleared by hand in Airflow).
UPDATE retry_dead_letters SET status = 'resolved', status_reason = %(status_reason)s, updated_at = now()
WHERE id = %(id)s AND status IN ('dlq', 'parked')
RETURNING id;

-- name: insert_job
INSERT INTO retry_replay_jobs (
    actor, actor_verified, os_user, source, reason, fix_version, processing_version, downstream, dag_ids,
    canary_position, run_on_latest_version
) VALUES (
    %(actor)s, %(actor_verified)s, %(os_user)s, %(source)s, %(reason)s, %(fix_version)s,
    %(processing_version)s, %(downstream)s, %(dag_ids)s, %(canary_position)s, %(run_on_latest_version)s
)
RETURNING id;

-- name: insert_job_items
INSERT INTO retry_replay_job_items (job_id, position, letter_id)
SELECT %(job_id)s, ordinality - 1, letter_id
FROM unnest(%(letter_ids)s::bigint[]) WITH ORDINALITY AS t(letter_id, ordinality);

-- name: claim_job
-- The oldest open job that nobody holds (or whose holder's lease expired), for %(owner)s. SKIP LOCKED:
-- two drivers never wait on each other and never take the same job.
UPDATE retry_replay_jobs SET
    status = 'running', lease_owner = %(owner)s,
    lease_until = clock_timestamp() + make_interval(secs => %(lease_seconds)s),
    started_at = coalesce(started_at, now())
WHERE id = (
    SELECT id FROM retry_replay_jobs
    WHERE status IN ('queued', 'running')
      AND (lease_until IS NULL OR lease_until < clock_timestamp())
      AND (%(job_id)s::bigint IS NULL OR id = %(job_id)s::bigint)
    ORDER BY id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
)
RETURNING *;

-- name: renew_job_lease
-- Still ours and still running: extend the lease. No row means cancelled or taken over: stop.
UPDATE retry_replay_jobs SET lease_until = clock_timestamp() + make_interval(secs => %(lease_seconds)s)
WHERE id = %(id)s AND lease_owner = %(owner)s AND status = 'running'
RETURNING id;

-- name: next_job_item
SELECT *, NULL AS replay_outcome FROM retry_replay_job_items
WHERE job_id = %(job_id)s AND outcome = 'pending'
ORDER BY position
LIMIT 1;

-- name: job_size
SELECT count(*) FROM retry_replay_job_items WHERE job_id = %(job_id)s;

-- name: set_job_item_replay
UPDATE retry_replay_job_items SET replay_id = %(replay_id)s
WHERE job_id = %(job_id)s AND position = %(position)s AND outcome = 'pending' AND replay_id IS NULL;

-- name: finish_job_item
UPDATE retry_replay_job_items SET
    outcome = %(outcome)s, detail = %(detail)s, replay_id = coalesce(%(replay_id)s, replay_id), done_at = now()
WHERE job_id = %(job_id)s AND position = %(position)s AND outcome = 'pending';

-- name: finish_job
-- The job done (its holder's, nothing pending); and whether another open job nobody holds waits (as
-- claim_job would find one), so a driver's round ends without a claim that finds none.
UPDATE retry_replay_jobs SET status = 'done', finished_at = now(), lease_until = NULL
WHERE id = %(id)s AND status = 'running' AND lease_owner = %(owner)s
  AND NOT EXISTS (SELECT 1 FROM retry_replay_job_items WHERE job_id = %(id)s AND outcome = 'pending')
RETURNING EXISTS (
    SELECT 1 FROM retry_replay_jobs
    WHERE id <> %(id)s AND status IN ('queued', 'running')
      AND (lease_until IS NULL OR lease_until < clock_timestamp())
) AS another_waits;

-- name: release_job
-- A driver that stops (shutdown) hands its job back at once instead of waiting for the lease.
UPDATE retry_replay_jobs SET lease_until = NULL
WHERE id = %(id)s AND lease_owner = %(owner)s AND status = 'running';

-- name: cancel_job
-- Letters the job has not claimed yet are left in dlq; a clear already sent finishes normally, and its
-- item is closed 'unknown' now (its replay says what happened): no item of a finished job stays pending.
WITH job AS (
    UPDATE retry_replay_jobs SET status = 'cancelled', cancelled_by = %(actor)s, finished_at = now(),
        lease_until = NULL
    WHERE id = %(id)s AND status IN ('queued', 'running')
    RETURNING id
), items AS (
    UPDATE retry_replay_job_items SET outcome = 'cancelled', detail = %(detail)s, done_at = now()
    WHERE job_id IN (SELECT id FROM job) AND outcome = 'pending' AND replay_id IS NULL
    RETURNING letter_id
), claimed AS (
    UPDATE retry_replay_job_items SET outcome = 'unknown', done_at = now(),
        detail = 'the job was cancelled during this letter''s clear; its replay says what happened'
    WHERE job_id IN (SELECT id FROM job) AND outcome = 'pending' AND replay_id IS NOT NULL
)
SELECT (SELECT id FROM job) AS id, (SELECT count(*) FROM items) AS cancelled;

-- name: get_job
SELECT * FROM retry_replay_jobs WHERE id = %(id)s;

-- name: job_items
SELECT i.*, r.outcome AS replay_outcome
FROM retry_replay_job_items i LEFT JOIN retry_replays r ON r.id = i.replay_id
WHERE i.job_id = %(job_id)s
ORDER BY i.position;

-- name: release_failed_claim
-- Airflow refused the clear: this replay (still open and not cleared) is closed clear-failed and its
-- letter goes back to the queue. No row: another process closed the claim first.
WITH closed AS (
    UPDATE retry_replays SET outcome = 'clear-failed', outcome_at = now(), detail = %(detail)s, lease_until = NULL
    WHERE id = %(replay_id)s AND outcome IN ('pending', 'unknown') AND cleared_at IS NULL
    RETURNING letter_id
)
UPDATE retry_dead_letters SET status = 'dlq', status_reason = %(status_reason)s, updated_at = now()
WHERE id IN (SELECT letter_id FROM closed) AND status = 'replaying'
RETURNING id;

-- name: end_replay_without_success
-- Airflow cleared the task instance and it ended without succeeding (upstream_failed, skipped, removed,
-- or failed with no newer try): the replay failed. Counted like a failed try: back to dlq with one more
-- replay, parked at the cap.
WITH closed AS (
    UPDATE retry_replays SET outcome = 'failed', outcome_at = now(), detail = %(detail)s, lease_until = NULL
    WHERE id = %(replay_id)s AND outcome IN ('pending', 'unknown')
    RETURNING letter_id
)
UPDATE retry_dead_letters SET
    status = CASE WHEN replay_count + 1 >= %(replay_cap)s THEN 'parked' ELSE 'dlq' END,
    replay_count = replay_count + 1, status_reason = %(status_reason)s, updated_at = now()
WHERE id IN (SELECT letter_id FROM closed) AND status = 'replaying'
RETURNING id, status, replay_count, try_number;

-- name: release_unclaimed
-- A replaying letter with no open claim (nothing will decide it) rests in the queue again.
UPDATE retry_dead_letters l SET status = 'dlq', status_reason = %(status_reason)s, updated_at = now()
WHERE l.id = %(id)s AND l.status = 'replaying'
  AND NOT EXISTS (SELECT 1 FROM retry_replays r WHERE r.letter_id = l.id AND r.outcome IN ('pending', 'unknown'))
RETURNING id, try_number;

-- name: database_now
SELECT clock_timestamp();

-- name: park_vanished_letter
-- A replaying letter whose task instance or run Airflow no longer has (404): nothing can run, so it is
-- parked whatever its claim says, and the claim is closed failed.
WITH changed AS (
    UPDATE retry_dead_letters SET status = 'parked', status_reason = %(status_reason)s, updated_at = now()
    WHERE id = %(id)s AND status = 'replaying'
    RETURNING id
), closed AS (
    UPDATE retry_replays SET outcome = 'failed', outcome_at = now(), detail = %(status_reason)s, lease_until = NULL
    WHERE letter_id IN (SELECT id FROM changed) AND outcome IN ('pending', 'unknown')
)
SELECT id FROM changed;

-- name: set_status
-- A person parks or dismisses a letter. A replaying letter changes only when its claim never reached
-- Airflow (its lease expired before any clear): never while a clear is in flight, its answer was lost
-- (the clear may have happened: the sync decides first), or its task instance runs after a confirmed
-- clear (that replay is not abandoned).
WITH changed AS (
    UPDATE retry_dead_letters l SET status = %(status)s, status_reason = %(status_reason)s, updated_at = now()
    WHERE l.id = %(id)s AND l.status = ANY(%(from_statuses)s)
      AND NOT EXISTS (
          SELECT 1 FROM retry_replays r
          WHERE r.letter_id = l.id AND r.outcome IN ('pending', 'unknown')
            AND (r.cleared_at IS NOT NULL OR r.outcome = 'unknown' OR r.lease_until > clock_timestamp())
      )
    RETURNING l.id, l.try_number
), closed AS (
    UPDATE retry_replays SET outcome = 'abandoned', outcome_at = now(), detail = %(status_reason)s,
        lease_until = NULL
    WHERE letter_id IN (SELECT id FROM changed) AND outcome = 'pending' AND cleared_at IS NULL
)
SELECT id, try_number FROM changed;

-- name: replays_of_letter
SELECT * FROM retry_replays WHERE letter_id = %(letter_id)s ORDER BY requested_at DESC, id DESC;

-- name: replaying_letters
-- Letters in replaying not looked at since %(since)s, longest unlooked-at first, stamped as looked at
-- (undecided rows rotate: none can starve the others), each with its open claim (if any): the sync
-- decides from Airflow's state. With %(letter_id)s, that one letter only (the canary a driver awaits).
WITH due AS (
    SELECT id FROM retry_dead_letters
    WHERE status = 'replaying' AND (checked_at IS NULL OR checked_at < %(since)s)
      AND (%(letter_id)s::bigint IS NULL OR id = %(letter_id)s::bigint)
    ORDER BY checked_at NULLS FIRST, id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
), stamped AS (
    UPDATE retry_dead_letters l SET checked_at = clock_timestamp() FROM due WHERE l.id = due.id
    RETURNING l.*
)
SELECT s.*, r.id AS replay_id, r.outcome AS replay_outcome, r.try_number_before, r.cleared_at,
       r.requested_at AS replay_requested_at,
       coalesce(r.lease_until < clock_timestamp(), false) AS lease_expired
FROM stamped s
LEFT JOIN LATERAL (
    SELECT * FROM retry_replays
    WHERE letter_id = s.id AND outcome IN ('pending', 'unknown')
    ORDER BY id DESC LIMIT 1
) r ON true
ORDER BY s.id;

-- name: letter_exists_for_ti
SELECT id FROM retry_dead_letters
WHERE dag_id = %(dag_id)s AND run_id = %(run_id)s AND task_id = %(task_id)s AND map_index = %(map_index)s
  AND try_number >= %(try_number)s;

-- name: delete_closed_before
-- Retention is explicit: only closed letters (resolved, dismissed) older than the cut-off. Their
-- history stays: each gets a 'purged' event.
WITH doomed AS (
    SELECT id, try_number FROM retry_dead_letters
    WHERE status IN ('resolved', 'dismissed') AND updated_at < %(before)s
)
, gone_replays AS (DELETE FROM retry_replays WHERE letter_id IN (SELECT id FROM doomed))
, history AS (
    INSERT INTO retry_letter_events (letter_id, event, actor, actor_verified, os_user, source, reason, try_number)
    SELECT id, 'purged', %(actor)s, %(actor_verified)s, %(os_user)s, %(source)s, %(reason)s, try_number FROM doomed
)
DELETE FROM retry_dead_letters WHERE id IN (SELECT id FROM doomed)
RETURNING id;

-- The Airflow UI plugin's reads (airflow_retry_provider/plugin/queries.py). Each takes the filters of
-- list_letters plus the parameter dag_ids: the DAGs the signed-in user may read; letters of any other DAG are
-- never returned nor counted.

-- name: unnumbered_versions
-- The DAG versions letters name by UUID only (a worker knows no number): what the sweeper looks up,
-- newest letters first, so versions Airflow no longer has (they stay unnumbered) never starve new ones.
SELECT dag_id, dag_version_id
FROM retry_dead_letters
WHERE dag_version_id IS NOT NULL AND dag_version_number IS NULL
GROUP BY dag_id, dag_version_id
ORDER BY max(created_at) DESC
LIMIT %(limit)s;

-- name: number_version
-- The number (and bundle) Airflow reports for a DAG version, on every letter that names it by UUID.
UPDATE retry_dead_letters SET
    dag_version_number = %(dag_version_number)s,
    bundle_name = coalesce(bundle_name, %(bundle_name)s),
    bundle_version = coalesce(bundle_version, %(bundle_version)s)
WHERE dag_id = %(dag_id)s AND dag_version_id = %(dag_version_id)s AND dag_version_number IS NULL;

-- name: open_groups_by_version
-- Root-cause groups of open letters per DAG, with the newest version their letters failed on;
-- letters whose version is unknown cannot say whether a newer one is deployed.
SELECT dag_id, fingerprint, max(dag_version_number) AS failed_on, count(*) AS letters
FROM retry_dead_letters
WHERE status IN ('dlq', 'parked') AND dag_version_number IS NOT NULL
GROUP BY dag_id, fingerprint
ORDER BY dag_id, fingerprint;

-- name: record_dag_version
INSERT INTO retry_dag_versions (dag_id, version_number, version_id, bundle_name, bundle_version, deployed_at)
VALUES (%(dag_id)s, %(version_number)s, %(id)s, %(bundle_name)s, %(bundle_version)s, %(created_at)s)
ON CONFLICT (dag_id) DO UPDATE SET
    version_number = EXCLUDED.version_number, version_id = EXCLUDED.version_id,
    bundle_name = EXCLUDED.bundle_name, bundle_version = EXCLUDED.bundle_version,
    deployed_at = EXCLUDED.deployed_at, seen_at = now();

-- name: insert_fix_notice
-- Once per DAG version and group: a second sweep (or a racing one) gets no row back.
INSERT INTO retry_fix_notices (dag_id, fingerprint, version_number, failed_on, letters, deployed_at)
VALUES (%(dag_id)s, %(fingerprint)s, %(version_number)s, %(failed_on)s, %(letters)s, %(deployed_at)s)
ON CONFLICT ON CONSTRAINT retry_fix_notices_once DO NOTHING
RETURNING *;

-- name: forget_closed_versions
-- The DAG versions and notices no open letter is about any more: their exit.
WITH gone_versions AS (
    DELETE FROM retry_dag_versions v
    WHERE NOT EXISTS (SELECT 1 FROM retry_dead_letters l WHERE l.dag_id = v.dag_id AND l.status IN ('dlq', 'parked'))
    RETURNING 1
), gone_notices AS (
    DELETE FROM retry_fix_notices n
    WHERE NOT EXISTS (
        SELECT 1 FROM retry_dead_letters l
        WHERE l.dag_id = n.dag_id AND l.fingerprint = n.fingerprint AND l.status IN ('dlq', 'parked')
    )
    RETURNING 1
)
SELECT (SELECT count(*) FROM gone_versions) AS versions, (SELECT count(*) FROM gone_notices) AS notices;

-- name: wait_for_canary
-- The canary's clear is done: the job waits for its outcome until canary_until (set once, so a driver
-- that takes the job over keeps the first driver's deadline).
UPDATE retry_replay_jobs SET
    canary_until = coalesce(canary_until, clock_timestamp() + make_interval(secs => %(timeout_seconds)s))
WHERE id = %(id)s AND lease_owner = %(owner)s AND status = 'running'
RETURNING canary_until;

-- name: canary_of_job
-- The canary item, its replay's outcome and the letter's reason now, and whether the wait is over.
SELECT i.position, i.letter_id, i.outcome, i.replay_id, i.detail, r.outcome AS replay_outcome,
       r.detail AS replay_detail, l.status AS letter_status, l.reason AS letter_reason,
       l.fingerprint AS letter_fingerprint, coalesce(j.canary_until < clock_timestamp(), false) AS overdue
FROM retry_replay_jobs j
JOIN retry_replay_job_items i ON i.job_id = j.id AND i.position = j.canary_position
LEFT JOIN retry_replays r ON r.id = i.replay_id
LEFT JOIN retry_dead_letters l ON l.id = i.letter_id
WHERE j.id = %(id)s;

-- name: pass_canary
-- The canary's letter resolved: the rest follow at the rising pace from now.
UPDATE retry_replay_jobs SET paced_since = clock_timestamp()
WHERE id = %(id)s AND lease_owner = %(owner)s AND status = 'running' AND paced_since IS NULL
RETURNING paced_since;

-- name: job_pace
-- How many clears the job sent in its current pace step (since the canary's success, or the job's last
-- failed replay after it, whichever is later) and how long since its last clear.
WITH step AS (
    SELECT greatest(
               j.paced_since,
               (SELECT max(r.outcome_at) FROM retry_replays r
                WHERE r.job_id = j.id AND r.outcome IN ('failed', 'clear-failed') AND r.outcome_at > j.paced_since)
           ) AS since
    FROM retry_replay_jobs j WHERE j.id = %(id)s
)
SELECT count(r.id) FILTER (WHERE r.clear_sent_at > step.since) AS step_clears,
       coalesce(clock_timestamp() - max(r.clear_sent_at), interval '1 hour') AS since_clear
FROM step LEFT JOIN retry_replays r ON r.job_id = %(id)s
GROUP BY step.since;

-- name: last_decided_replays
-- The job's newest decided replays (succeeded or failed), newest first: the stop rule reads them.
SELECT r.outcome
FROM retry_replays r
WHERE r.job_id = %(id)s AND r.outcome IN ('succeeded', 'failed', 'clear-failed')
ORDER BY r.outcome_at DESC, r.id DESC
LIMIT %(limit)s;

-- name: stop_job
-- The canary failed or stayed undecided, or the stop rule fired: the job ends 'stopped'. Letters it
-- has not claimed stay in dlq untouched (no claim, no replay counted); a clear in flight finishes
-- normally and its item is closed 'unknown' (its replay says what happened).
WITH job AS (
    UPDATE retry_replay_jobs SET status = 'stopped', stop_reason = %(reason)s, finished_at = now(),
        lease_until = NULL
    WHERE id = %(id)s AND lease_owner = %(owner)s AND status = 'running'
    RETURNING id
), items AS (
    UPDATE retry_replay_job_items SET outcome = 'stopped', detail = %(detail)s, done_at = now()
    WHERE job_id IN (SELECT id FROM job) AND outcome = 'pending' AND replay_id IS NULL
    RETURNING letter_id
), claimed AS (
    UPDATE retry_replay_job_items SET outcome = 'unknown', done_at = now(),
        detail = 'the job stopped during this letter''s clear; its replay says what happened'
    WHERE job_id IN (SELECT id FROM job) AND outcome = 'pending' AND replay_id IS NOT NULL
)
SELECT (SELECT id FROM job) AS id, (SELECT count(*) FROM items) AS stopped;

-- name: job_verdict
-- Was it the fix? Each letter of the job once, by what became of it after the job's replay: resolved;
-- filed again with the same root cause (fingerprint at the replay) or with another one.
SELECT count(*) FILTER (WHERE r.outcome = 'succeeded') AS resolved,
       count(*) FILTER (WHERE r.outcome = 'failed' AND l.fingerprint = r.fingerprint_before) AS same_cause,
       count(*) FILTER (WHERE r.outcome = 'failed' AND l.fingerprint IS DISTINCT FROM r.fingerprint_before)
           AS new_cause,
       count(*) FILTER (WHERE r.outcome IS NULL OR r.outcome NOT IN ('succeeded', 'failed')) AS undecided
FROM retry_replay_job_items i
LEFT JOIN retry_replays r ON r.id = i.replay_id
LEFT JOIN retry_dead_letters l ON l.id = i.letter_id
WHERE i.job_id = %(id)s AND i.outcome IN ('cleared', 'included', 'unknown');

-- name: sweep_state
-- Where the sweeper stands (issue 46): its watermark in Airflow's stream of ended task instances and
-- its full pass over the letters at rest. No row yet: a first sweep (or a lost watermark).
SELECT watermark, watermark_skip, caught_up, pass_started_at FROM retry_sweep_state WHERE name = %(name)s;

-- name: save_sweep_state
INSERT INTO retry_sweep_state (name, watermark, watermark_skip, caught_up, pass_started_at, updated_at)
VALUES (%(name)s, %(watermark)s, %(watermark_skip)s, %(caught_up)s, %(pass_started_at)s, now())
ON CONFLICT (name) DO UPDATE SET watermark = EXCLUDED.watermark, watermark_skip = EXCLUDED.watermark_skip,
    caught_up = EXCLUDED.caught_up, pass_started_at = EXCLUDED.pass_started_at, updated_at = now();

-- name: open_letters_of_task_instances
-- The open letters (dlq, parked, replaying) of the task instances a page of Airflow's answer names.
SELECT l.* FROM retry_dead_letters l
JOIN unnest(%(dag_ids)s::text[], %(run_ids)s::text[], %(task_ids)s::text[], %(map_indexes)s::int[])
    AS k(dag_id, run_id, task_id, map_index)
  ON l.dag_id = k.dag_id AND l.run_id = k.run_id AND l.task_id = k.task_id AND l.map_index = k.map_index
WHERE l.status IN ('dlq', 'parked', 'replaying')
ORDER BY l.id;

-- name: resting_letters_not_checked_since
-- The full pass: letters at rest (dlq, parked) not checked since %(since)s (the pass's start), longest
-- unchecked first. Not stamped here: a letter is stamped once Airflow answered for it (stamp_checked),
-- so a sweep stopped by a 429 or a 5xx keeps its place.
SELECT * FROM retry_dead_letters
WHERE status IN ('dlq', 'parked') AND (checked_at IS NULL OR checked_at < %(since)s)
ORDER BY checked_at NULLS FIRST, id
LIMIT %(limit)s;

-- name: stamp_checked
UPDATE retry_dead_letters SET checked_at = clock_timestamp() WHERE id = ANY(%(ids)s::bigint[]);

-- name: sweep_backlog
-- How far behind the full pass is: letters at rest not checked since %(since)s, and the oldest check
-- of any letter at rest (a letter never checked counts from when it was filed).
SELECT count(*) FILTER (WHERE checked_at IS NULL OR checked_at < %(since)s) AS unchecked,
       min(coalesce(checked_at, created_at)) AS oldest_check
FROM retry_dead_letters WHERE status IN ('dlq', 'parked');

-- name: open_letter_dags
SELECT DISTINCT dag_id FROM retry_dead_letters WHERE status IN ('dlq', 'parked', 'replaying') ORDER BY dag_id;

-- name: upsert_letter_impact
-- What letters block (issue 48), one impact for all of %(letter_ids)s (the letters of one task in one
-- DAG run, issue 58): written after filing, replaced by each refresh; the letters no longer await it.
WITH stored AS (
    INSERT INTO retry_letter_impacts (letter_id, impact, computed_at)
    SELECT letter_id, %(impact)s::jsonb, clock_timestamp()
    FROM unnest(%(letter_ids)s::bigint[]) AS ids(letter_id)
    JOIN retry_dead_letters l ON l.id = ids.letter_id
    ON CONFLICT (letter_id) DO UPDATE SET impact = EXCLUDED.impact, computed_at = EXCLUDED.computed_at
    RETURNING letter_id
)
DELETE FROM retry_impact_queue WHERE letter_id IN (SELECT letter_id FROM stored);

-- name: letter_impact
SELECT impact, computed_at FROM retry_letter_impacts WHERE letter_id = %(letter_id)s;

-- name: letters_due_impact
-- Open letters (dlq, parked) whose impact is missing or older than the cut-off, the longest
-- unrefreshed first: a sweep refreshes at most %(limit)s of them. A replaying letter waits: its
-- replay is the delivery's chance, not a loss.
SELECT l.* FROM retry_dead_letters l
LEFT JOIN retry_letter_impacts i ON i.letter_id = l.id
WHERE l.status IN ('dlq', 'parked')
  AND (i.computed_at IS NULL OR i.computed_at < clock_timestamp() - make_interval(secs => %(stale_seconds)s))
  -- a letter awaiting its first impact is the impact queue's (claim_impacts), until it gives up
  AND NOT EXISTS (SELECT 1 FROM retry_impact_queue q WHERE q.letter_id = l.id AND q.gave_up_at IS NULL)
ORDER BY i.computed_at NULLS FIRST, l.id
LIMIT %(limit)s;

-- name: queue_impact
-- Filing a letter (created or changed) queues its impact, in the filing's transaction (issue 58); a
-- letter queued before starts again (its attempts and any give-up forgotten).
INSERT INTO retry_impact_queue (letter_id) VALUES (%(letter_id)s)
ON CONFLICT (letter_id) DO UPDATE SET
    queued_at = clock_timestamp(), attempts = 0, lease_until = NULL, last_error = NULL, gave_up_at = NULL;

-- name: notify_filed
-- Wakes the api-server's impact thread (LISTEN retry_provider_filed) when the filing commits.
SELECT pg_notify('retry_provider_filed', '');

-- name: listen_filed
LISTEN retry_provider_filed;

-- name: try_impact_lead
-- One impact thread computes at a time in a deployment (its in-process cache then reads each DAG run
-- once): a session lock, held while its listening connection lives.
SELECT pg_try_advisory_lock(7311058);

-- name: claim_impacts
-- The letters awaiting their impact, not leased by another process, queued at least %(min_age_seconds)s
-- ago, the oldest first, at most %(limit)s: each claimed for %(lease_seconds)s and counted an attempt.
UPDATE retry_impact_queue q SET
    attempts = q.attempts + 1,
    lease_until = clock_timestamp() + make_interval(secs => %(lease_seconds)s)
FROM retry_dead_letters l
WHERE l.id = q.letter_id
  AND q.letter_id IN (
      SELECT letter_id FROM retry_impact_queue
      WHERE gave_up_at IS NULL
        AND (lease_until IS NULL OR lease_until < clock_timestamp())
        AND queued_at <= clock_timestamp() - make_interval(secs => %(min_age_seconds)s)
      ORDER BY queued_at, letter_id
      LIMIT %(limit)s
      FOR UPDATE SKIP LOCKED
  )
RETURNING l.*, q.attempts AS impact_attempts;

-- name: impact_not_computed
-- The impact of %(letter_ids)s could not be computed (%(reason)s): tried again after
-- %(retry_seconds)s x its attempts, or given up (gave_up_at) once it had %(max_attempts)s.
UPDATE retry_impact_queue SET
    last_error = %(reason)s,
    lease_until = clock_timestamp() + make_interval(secs => %(retry_seconds)s * attempts),
    gave_up_at = CASE WHEN attempts >= %(max_attempts)s THEN clock_timestamp() END
WHERE letter_id = ANY(%(letter_ids)s::bigint[]) AND gave_up_at IS NULL;

-- name: record_failed_try
-- One row per failed try of a managed task (issue 57): the retry policy writes the tries its task's
-- code failed, the infra watcher the tries that ended with no exception. The first writer wins.
INSERT INTO retry_failed_tries (dag_id, run_id, task_id, map_index, try_number, failure_class, category, hostname)
VALUES (%(dag_id)s, %(run_id)s, %(task_id)s, %(map_index)s, %(try_number)s, %(failure_class)s, %(category)s,
        %(hostname)s)
ON CONFLICT (dag_id, run_id, task_id, map_index, try_number) DO NOTHING;

-- name: failed_tries_of
SELECT try_number, failure_class, category, hostname FROM retry_failed_tries
WHERE dag_id = %(dag_id)s AND run_id = %(run_id)s AND task_id = %(task_id)s AND map_index = %(map_index)s
ORDER BY try_number;

-- name: letter_of_task_instance
SELECT * FROM retry_dead_letters
WHERE dag_id = %(dag_id)s AND run_id = %(run_id)s AND task_id = %(task_id)s AND map_index = %(map_index)s;

-- name: reclassify_letter
-- A letter filed for a try no exception explained (unknown, exception type TaskDied, by the
-- dag-processor's callback; unknown/filed-by-sweeper) gets the class its evidence shows; any other letter is left as it is.
UPDATE retry_dead_letters SET
    failure_class = %(failure_class)s, category = %(category)s, rule = %(rule)s,
    exception_type = %(exception_type)s, message = %(message)s, reason = %(reason)s,
    fingerprint = %(fingerprint)s, updated_at = now()
WHERE id = %(id)s AND try_number = %(try_number)s AND failure_class = 'unknown'
  AND (exception_type = 'TaskDied' OR category = 'filed-by-sweeper')
RETURNING status, replay_count;

-- name: try_infra_watch_lead
-- One infra watcher reads Airflow at a time in a deployment (issue 57): a session lock, held while
-- its dedicated connection lives; another api-server worker takes over when that connection goes.
SELECT pg_try_advisory_lock(7311059);
