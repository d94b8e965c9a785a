-- The breakers' statements, run by airflow_retry_provider.breaker.store. Times come from the
-- database clock, so every worker sees one clock.

-- name: ensure
INSERT INTO retry_breakers (dependency) VALUES (%(dependency)s) ON CONFLICT (dependency) DO NOTHING;

-- name: lock
SELECT dependency, status, cooldown_seconds, opened_at, probe_at, probe_key, probe_until, forced,
       failures_at_open, clock_timestamp() AS now
  FROM retry_breakers
 WHERE dependency = %(dependency)s
   FOR UPDATE;

-- name: peek
SELECT dependency, status, cooldown_seconds, opened_at, probe_at, probe_key, probe_until, forced,
       failures_at_open, clock_timestamp() AS now
  FROM retry_breakers
 WHERE dependency = %(dependency)s;

-- name: save
UPDATE retry_breakers
   SET status = %(status)s,
       cooldown_seconds = %(cooldown_seconds)s,
       opened_at = %(opened_at)s,
       probe_at = %(probe_at)s,
       probe_key = %(probe_key)s,
       probe_until = %(probe_until)s,
       forced = %(forced)s,
       failures_at_open = %(failures_at_open)s,
       updated_at = clock_timestamp()
 WHERE dependency = %(dependency)s;

-- name: record_call
INSERT INTO retry_breaker_calls (dependency, bucket, failures, calls)
VALUES (%(dependency)s, to_timestamp(floor(extract(epoch FROM clock_timestamp()) / 10) * 10), %(failures)s, 1)
ON CONFLICT (dependency, bucket)
DO UPDATE SET failures = retry_breaker_calls.failures + EXCLUDED.failures,
              calls = retry_breaker_calls.calls + 1;

-- name: window
SELECT coalesce(sum(failures), 0)::int AS failures, coalesce(sum(calls), 0)::int AS calls
  FROM retry_breaker_calls
 WHERE dependency = %(dependency)s
   AND bucket > clock_timestamp() - make_interval(secs => %(window_seconds)s);

-- name: window_has_failures
SELECT EXISTS (
    SELECT 1 FROM retry_breaker_calls
     WHERE dependency = %(dependency)s
       AND failures > 0
       AND bucket > clock_timestamp() - make_interval(secs => %(window_seconds)s)
) AS hot;

-- name: prune_calls
DELETE FROM retry_breaker_calls
 WHERE dependency = %(dependency)s
   AND bucket < clock_timestamp() - make_interval(secs => %(keep_seconds)s);

-- name: event
INSERT INTO retry_breaker_events (dependency, from_status, to_status, actor, reason)
VALUES (%(dependency)s, %(from_status)s, %(to_status)s, %(actor)s, %(reason)s);

-- name: hold
INSERT INTO retry_breaker_holds (dependency, ti_key, held_until)
VALUES (%(dependency)s, %(ti_key)s, %(held_until)s)
ON CONFLICT (dependency, ti_key)
DO UPDATE SET held_until = EXCLUDED.held_until, holds = retry_breaker_holds.holds + 1
RETURNING held_since, holds;

-- name: held_since
SELECT held_since FROM retry_breaker_holds WHERE dependency = %(dependency)s AND ti_key = %(ti_key)s;

-- name: release
DELETE FROM retry_breaker_holds WHERE dependency = %(dependency)s AND ti_key = %(ti_key)s;

-- A hold whose task never asked again (cleared, marked by a person, its run deleted).
-- name: prune_holds
DELETE FROM retry_breaker_holds
 WHERE dependency = %(dependency)s
   AND held_until < clock_timestamp() - make_interval(secs => %(keep_seconds)s);

-- name: statuses
SELECT b.dependency, b.status, b.cooldown_seconds, b.opened_at, b.probe_at, b.probe_key, b.probe_until,
       b.forced, b.failures_at_open, b.updated_at,
       (SELECT count(*) FROM retry_breaker_holds h WHERE h.dependency = b.dependency)::int AS held,
       (SELECT coalesce(sum(c.failures), 0) FROM retry_breaker_calls c
         WHERE c.dependency = b.dependency AND c.bucket > clock_timestamp() - interval '10 minutes')::int
           AS failures_10m,
       (SELECT coalesce(sum(c.calls), 0) FROM retry_breaker_calls c
         WHERE c.dependency = b.dependency AND c.bucket > clock_timestamp() - interval '10 minutes')::int
           AS calls_10m
  FROM retry_breakers b
 ORDER BY b.dependency;

-- name: events
SELECT id, dependency, at, from_status, to_status, actor, reason
  FROM retry_breaker_events
 WHERE dependency = %(dependency)s
 ORDER BY at DESC, id DESC
 LIMIT %(limit)s;
