-- 0016: retention deletes recorded failed tries by age (maintenance/retention.py, retention_tries_days),
-- and a letter's events may name the infra watcher (issue 57) as their source, as its filed_by does.
CREATE INDEX IF NOT EXISTS retry_failed_tries_recorded_at ON retry_failed_tries (recorded_at);

ALTER TABLE retry_letter_events DROP CONSTRAINT IF EXISTS retry_letter_events_source;
ALTER TABLE retry_letter_events ADD CONSTRAINT retry_letter_events_source
    CHECK (source IN ('callback', 'sweeper', 'watcher', 'ui', 'cli', 'api', 'driver'));
