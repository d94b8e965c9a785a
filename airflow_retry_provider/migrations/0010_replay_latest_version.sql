-- 0010: a replay that runs on the fix (issue 29 item 3). The job keeps what the operator asked of
-- Airflow's clearTaskInstances run_on_latest_version: true (run on the DAG's latest version and
-- bundle version), false (the run's own), or NULL (Airflow decides: the DAG's
-- rerun_with_latest_version, then [core] rerun_with_latest_version, else the run's own).
ALTER TABLE retry_replay_jobs ADD COLUMN IF NOT EXISTS run_on_latest_version BOOLEAN;
