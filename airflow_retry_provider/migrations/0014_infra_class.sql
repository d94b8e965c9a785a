-- 0014: failures of the infrastructure a task ran on (issue 57). A letter's class may be 'infra'
-- (oom-killed, killed, terminated, worker-lost, heartbeat-timeout, start-failed: policy/infra.py),
-- and each failed try of a managed task is recorded once with its class: the retry policy records
-- the tries its task's code failed (poison, retryable, unknown), the api-server's watcher the tries
-- that ended with no exception (infra, or unknown/task-died when they cannot be told apart). The policy
-- counts the author's attempts from these rows; the Retries tab shows which tries spent none.
ALTER TABLE retry_dead_letters DROP CONSTRAINT IF EXISTS retry_dead_letters_class;
ALTER TABLE retry_dead_letters ADD CONSTRAINT retry_dead_letters_class
    CHECK (failure_class IN ('poison', 'retryable', 'unknown', 'infra'));

CREATE TABLE IF NOT EXISTS retry_failed_tries (
    dag_id        TEXT        NOT NULL,
    run_id        TEXT        NOT NULL,
    task_id       TEXT        NOT NULL,
    map_index     INTEGER     NOT NULL DEFAULT -1,
    try_number    INTEGER     NOT NULL CHECK (try_number >= 1),
    failure_class TEXT        NOT NULL
        CHECK (failure_class IN ('poison', 'retryable', 'unknown', 'infra')),
    category      TEXT        NOT NULL,
    hostname      TEXT,
    recorded_at   TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (dag_id, run_id, task_id, map_index, try_number)
);
