-- 0009: a replay job starts with one canary (issue 29 item 4). A job of more than one letter clears
-- its canary item first and waits for its replay's outcome, at most until canary_until (the
-- driver's wait survives the driver: any driver that takes the job over reads these columns). The
-- canary's success stamps paced_since (the rest follow at the rising pace from then); its failure,
-- an undecided canary, or the stop rule ends the job 'stopped' with stop_reason, and the items it
-- had not reached are closed 'stopped': their letters stay in dlq, unclaimed, no replay counted.

ALTER TABLE retry_replay_jobs ADD COLUMN IF NOT EXISTS canary_position INTEGER;
ALTER TABLE retry_replay_jobs ADD COLUMN IF NOT EXISTS canary_until TIMESTAMPTZ;
ALTER TABLE retry_replay_jobs ADD COLUMN IF NOT EXISTS paced_since TIMESTAMPTZ;
ALTER TABLE retry_replay_jobs ADD COLUMN IF NOT EXISTS stop_reason TEXT;

ALTER TABLE retry_replay_jobs DROP CONSTRAINT IF EXISTS retry_replay_jobs_status;
ALTER TABLE retry_replay_jobs ADD CONSTRAINT retry_replay_jobs_status CHECK (
    status IN ('queued', 'running', 'done', 'cancelled', 'stopped')
);

ALTER TABLE retry_replay_job_items DROP CONSTRAINT IF EXISTS retry_replay_job_items_outcome;
ALTER TABLE retry_replay_job_items ADD CONSTRAINT retry_replay_job_items_outcome CHECK (
    outcome IN ('pending', 'cleared', 'clear-failed', 'unknown', 'refused', 'included', 'cancelled', 'stopped')
);

-- Was it the fix (issue 29 item 6)? A replay keeps the letter's root cause (fingerprint) at its claim:
-- a letter filed again after it failed again with the same cause (the fix did not work) or another
-- (a new problem). NULL for replays made before 0009.
ALTER TABLE retry_replays ADD COLUMN IF NOT EXISTS fingerprint_before TEXT;
