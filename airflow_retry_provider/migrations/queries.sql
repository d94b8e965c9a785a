-- The migration runner's own statements (airflow_retry_provider/migrations/__init__.py).

-- name: lock
-- One upgrade at a time per database: a second waits, then finds the work done. Held until commit.
SELECT pg_advisory_xact_lock(7311001);

-- name: create_version_table
-- One row per applied migration; the database's version is the highest.
CREATE TABLE IF NOT EXISTS retry_provider_schema_version (
    version     integer     PRIMARY KEY,
    name        text        NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
);

-- name: version_table_exists
SELECT to_regclass('retry_provider_schema_version') IS NOT NULL;

-- name: current_version
SELECT coalesce(max(version), 0) FROM retry_provider_schema_version;

-- name: record_version
INSERT INTO retry_provider_schema_version (version, name) VALUES (%(version)s, %(name)s);
