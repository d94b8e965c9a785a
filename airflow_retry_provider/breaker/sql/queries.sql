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

-- Whether task ti_key leads the held tasks of a dependency: no other hold, still waiting to ask
-- again, was held before it (its own hold's start, or now for a new one; ties by key). The
-- leader asks at the probe time and the others a slack later (policy/breaker.py, wake_at).
-- name: leads
SELECT NOT EXISTS (
    SELECT 1 FROM retry_breaker_holds o
     WHERE o.dependency = %(dependency)s
       AND o.ti_key <> %(ti_key)s
       AND o.held_until >= clock_timestamp()
       AND (o.held_since, o.ti_key) < (
               coalesce((SELECT h.held_since FROM retry_breaker_holds h
                          WHERE h.dependency = %(dependency)s AND h.ti_key = %(ti_key)s),
                        clock_timestamp()),
               %(ti_key)s)
) AS leads;

-- name: held_since
SELECT held_since FROM retry_breaker_holds WHERE dependency = %(dependency)s AND ti_key = %(ti_key)s;

-- name: release
DELETE FROM retry_breaker_holds WHERE dependency = %(dependency)s AND ti_key = %(ti_key)s
RETURNING held_since;

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

-- The outages (migration 0007): one row per outage, keyed by the breaker's opened_at.

-- name: outage_begin
INSERT INTO retry_breaker_outages
       (dependency, opened_at, failures_at_open, calls_at_open, opened_by, opened_reason)
VALUES (%(dependency)s, %(opened_at)s, %(failures_at_open)s, %(calls_at_open)s, %(opened_by)s, %(opened_reason)s)
ON CONFLICT (dependency, opened_at) DO NOTHING;

-- name: outage_end
UPDATE retry_breaker_outages SET closed_at = clock_timestamp()
 WHERE dependency = %(dependency)s AND opened_at = %(opened_at)s AND closed_at IS NULL;

-- A hold during the outage: a new hold (holds = 1) is one more task instance held.
-- name: outage_held
UPDATE retry_breaker_outages
   SET holds = holds + 1,
       tasks_held = tasks_held + CASE WHEN %(new_hold)s THEN 1 ELSE 0 END,
       dags_held = CASE WHEN %(dag_id)s = ANY(dags_held) THEN dags_held
                        ELSE array_append(dags_held, %(dag_id)s) END,
       expired = expired + CASE WHEN %(expired)s THEN 1 ELSE 0 END
 WHERE dependency = %(dependency)s AND opened_at = %(opened_at)s;

-- name: outage_probe
UPDATE retry_breaker_outages SET probes = probes + 1
 WHERE dependency = %(dependency)s AND opened_at = %(opened_at)s;

-- A held task ran again: credited to the outage it was held in (maybe ended since).
-- name: outage_released
UPDATE retry_breaker_outages SET released = released + 1
 WHERE id = (SELECT id FROM retry_breaker_outages
              WHERE dependency = %(dependency)s AND opened_at <= %(held_since)s
              ORDER BY opened_at DESC LIMIT 1);

-- Marks the outage told (once: the caller holds the dependency's lock) and returns what the
-- dependency-down alert says; no row when it was told already.
-- name: outage_tell_down
UPDATE retry_breaker_outages SET down_told_at = clock_timestamp()
 WHERE dependency = %(dependency)s AND opened_at = %(opened_at)s AND down_told_at IS NULL
RETURNING id;

-- name: outage
SELECT o.id, o.dependency, o.opened_at, o.closed_at, o.failures_at_open, o.calls_at_open, o.opened_by,
       o.opened_reason, o.tasks_held, cardinality(o.dags_held) AS dags_held, o.holds, o.released,
       o.expired, o.probes,
       (SELECT count(*) FROM retry_breaker_holds h WHERE h.dependency = o.dependency)::int AS held_now,
       (SELECT count(DISTINCT split_part(h.ti_key, '/', 1)) FROM retry_breaker_holds h
         WHERE h.dependency = o.dependency)::int AS dags_now,
       clock_timestamp() AS now
  FROM retry_breaker_outages o
 WHERE o.dependency = %(dependency)s AND o.opened_at = %(opened_at)s;

-- name: outages
SELECT o.id, o.dependency, o.opened_at, o.closed_at, o.failures_at_open, o.calls_at_open, o.opened_by,
       o.opened_reason, o.tasks_held, cardinality(o.dags_held) AS dags_held, o.holds, o.released,
       o.expired, o.probes, 0 AS held_now, 0 AS dags_now, clock_timestamp() AS now
  FROM retry_breaker_outages o
 WHERE o.dependency = %(dependency)s
 ORDER BY o.opened_at DESC
 LIMIT %(limit)s;

-- A listener's writes are its own: one that fails is rolled back, the transition kept.
-- name: listener_savepoint
SAVEPOINT breaker_listener;

-- name: listener_rollback
ROLLBACK TO SAVEPOINT breaker_listener;

-- name: listener_release
RELEASE SAVEPOINT breaker_listener;
