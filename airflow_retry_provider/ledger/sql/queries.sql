-- Every statement the work-unit ledger runs, by name. Parameters use %(name)s placeholders.

-- name: claim
-- Exactly one winner: a new key is inserted; an existing row is taken only when it failed, its
-- lease expired, its dedup window passed, or it is held by an earlier try of the same task
-- instance (Airflow never runs two tries of one task instance at once). Concurrent claims of one
-- key serialise on the row; the loser gets no row back. claimed_from records the status the
-- claim replaced ('running' means a takeover), NULL for a new unit.
INSERT INTO retry_work_units AS w (
    work_unit_key, status, owner, owner_ti, owner_try, remote_job_id, lease_expires_at
) VALUES (
    %(key)s, 'running', %(owner)s, %(owner_ti)s, %(owner_try)s, %(remote_job_id)s,
    clock_timestamp() + make_interval(secs => %(lease_seconds)s::double precision)
)
ON CONFLICT (work_unit_key) DO UPDATE SET
    status = 'running',
    owner = EXCLUDED.owner,
    owner_ti = EXCLUDED.owner_ti,
    owner_try = EXCLUDED.owner_try,
    remote_job_id = COALESCE(EXCLUDED.remote_job_id, w.remote_job_id),
    claims = w.claims + 1,
    claimed_from = w.status,
    claimed_at = clock_timestamp(),
    lease_expires_at = EXCLUDED.lease_expires_at,
    finished_at = NULL,
    dedup_expires_at = NULL,
    updated_at = clock_timestamp()
WHERE w.status = 'failed'
   OR (w.status = 'running' AND w.lease_expires_at <= clock_timestamp())
   OR (w.status = 'running' AND w.owner_ti = EXCLUDED.owner_ti AND w.owner_try < EXCLUDED.owner_try)
   OR (w.status = 'succeeded' AND w.dedup_expires_at <= clock_timestamp())
RETURNING w.*;

-- name: get_unit
SELECT w.* FROM retry_work_units AS w WHERE w.work_unit_key = %(key)s;

-- name: complete
UPDATE retry_work_units AS w SET
    status = 'succeeded',
    result_ref = %(result_ref)s::jsonb,
    remote_job_id = COALESCE(%(remote_job_id)s, w.remote_job_id),
    error = NULL,
    finished_at = clock_timestamp(),
    lease_expires_at = NULL,
    dedup_expires_at = clock_timestamp() + make_interval(secs => %(dedup_seconds)s::double precision),
    updated_at = clock_timestamp()
WHERE w.work_unit_key = %(key)s AND w.owner = %(owner)s AND w.status = 'running'
RETURNING w.*;

-- name: fail
UPDATE retry_work_units AS w SET
    status = 'failed',
    error = %(error)s,
    remote_job_id = COALESCE(%(remote_job_id)s, w.remote_job_id),
    finished_at = clock_timestamp(),
    lease_expires_at = NULL,
    updated_at = clock_timestamp()
WHERE w.work_unit_key = %(key)s AND w.owner = %(owner)s AND w.status = 'running'
RETURNING w.*;

-- name: set_remote_job_id
UPDATE retry_work_units SET remote_job_id = %(remote_job_id)s, updated_at = clock_timestamp()
WHERE work_unit_key = %(key)s AND owner = %(owner)s AND status = 'running'
RETURNING work_unit_key;

-- name: renew_lease
UPDATE retry_work_units
SET lease_expires_at = clock_timestamp() + make_interval(secs => %(lease_seconds)s::double precision), updated_at = clock_timestamp()
WHERE work_unit_key = %(key)s AND owner = %(owner)s AND status = 'running'
RETURNING lease_expires_at;

-- name: forget
DELETE FROM retry_work_units WHERE work_unit_key = %(key)s RETURNING work_unit_key;
