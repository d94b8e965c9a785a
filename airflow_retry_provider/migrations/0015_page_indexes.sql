-- 0015: the grouped view and the Deliveries view read what they show, not the whole table (issue 58:
-- each answers within 1 s with 100,000 letters stored and during a storm, bench/pages.py).
--
-- The grouped view (plugin/sql/queries.sql, ui_fingerprint_groups) counts the letters of each root
-- cause and the DAG versions they failed on. 0001's index for it lacks dag_version_number (added by
-- 0005), so PostgreSQL read the table and sorted every letter by fingerprint (104 ms at 100,000
-- letters); with the column included, an index-only scan in fingerprint order (34 ms).
DROP INDEX IF EXISTS retry_dead_letters_fingerprint_groups;
CREATE INDEX IF NOT EXISTS retry_dead_letters_fingerprint_versions
    ON retry_dead_letters (fingerprint, dag_id, status, created_at) INCLUDE (dag_version_number);

-- The Deliveries view (dlq/sql/deliveries.sql, delivery_blockers) expanded every stored impact's
-- deliveries to find the few due around today: a scan of retry_letter_impacts that grows with every
-- letter ever filed. An impact's last deadline, indexed, lets it skip the impacts whose deliveries are
-- all past.
--
-- IMMUTABLE, as an index needs: the deadlines are stored with their UTC offset
-- (policy/impact.py's Delivery.to_json writes an aware datetime's isoformat), so reading one does
-- not depend on the session's TimeZone.
CREATE OR REPLACE FUNCTION retry_impact_last_deadline(impact jsonb)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT max((d.value->>'deadline')::timestamptz) FROM jsonb_array_elements(impact->'deliveries') AS d(value) $$;

CREATE INDEX IF NOT EXISTS retry_letter_impacts_last_deadline
    ON retry_letter_impacts (retry_impact_last_deadline(impact));
