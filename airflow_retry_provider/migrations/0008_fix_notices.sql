-- 0008: the provider notices a possible fix (issue 29 item 2). The sweeper keeps the newest version
-- Airflow has of each DAG with open letters, and one notice per DAG version and root-cause group
-- whose letters failed on an older one: the fix-deployed alert is queued with the notice, once.
-- Both are the sweeper's (dlq/store.py); rows of DAGs and groups with no open letter left are
-- deleted by the same sweep, so nothing here outlives the letters it is about.

CREATE TABLE IF NOT EXISTS retry_dag_versions (
    dag_id          TEXT        PRIMARY KEY,
    version_number  INTEGER     NOT NULL,
    version_id      TEXT        NOT NULL,
    bundle_name     TEXT,
    bundle_version  TEXT,
    deployed_at     TIMESTAMPTZ,                      -- Airflow's created_at of the version
    seen_at         TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS retry_fix_notices (
    id              BIGSERIAL   PRIMARY KEY,
    dag_id          TEXT        NOT NULL,
    fingerprint     TEXT        NOT NULL,
    version_number  INTEGER     NOT NULL,             -- the newer version deployed
    failed_on       INTEGER     NOT NULL,             -- the newest version the group's open letters failed on
    letters         INTEGER     NOT NULL,             -- open letters of the group on older versions, when noticed
    deployed_at     TIMESTAMPTZ,
    noticed_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT retry_fix_notices_once UNIQUE (dag_id, fingerprint, version_number)
);
