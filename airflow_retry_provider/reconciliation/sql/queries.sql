-- Every statement reconciliation runs, by name. Parameters use %(name)s placeholders.
-- Workspace isolation: every statement but list_workspaces and missing_trail_tables filters every
-- table it reads by workspace id: = %(workspace_id)s, or the ids of %(workspace_ids)s (a text array;
-- a report for one workspace passes an array of one). Rows are grouped by workspace_id, so one
-- workspace's rows never change another's results.
-- Lists are ordered with COLLATE "C" (code point order), the order Python's sorted() gives.

-- name: missing_trail_tables
-- Which of the given tables do not exist (no DDL, no table lock).
SELECT n AS table_name FROM unnest(%(names)s::text[]) AS n WHERE to_regclass(n) IS NULL;

-- name: list_workspaces
-- Every workspace id in any trail table, by loose index scans (one index probe per workspace).
WITH RECURSIVE
runs_ws (workspace_id) AS (
    (SELECT workspace_id FROM source_runs ORDER BY workspace_id LIMIT 1)
    UNION ALL
    SELECT (SELECT t.workspace_id FROM source_runs t
            WHERE t.workspace_id > w.workspace_id ORDER BY t.workspace_id LIMIT 1)
    FROM runs_ws w WHERE w.workspace_id IS NOT NULL
),
tables_ws (workspace_id) AS (
    (SELECT workspace_id FROM bronze_tables ORDER BY workspace_id LIMIT 1)
    UNION ALL
    SELECT (SELECT t.workspace_id FROM bronze_tables t
            WHERE t.workspace_id > w.workspace_id ORDER BY t.workspace_id LIMIT 1)
    FROM tables_ws w WHERE w.workspace_id IS NOT NULL
),
transforms_ws (workspace_id) AS (
    (SELECT workspace_id FROM transforms ORDER BY workspace_id LIMIT 1)
    UNION ALL
    SELECT (SELECT t.workspace_id FROM transforms t
            WHERE t.workspace_id > w.workspace_id ORDER BY t.workspace_id LIMIT 1)
    FROM transforms_ws w WHERE w.workspace_id IS NOT NULL
),
events_ws (workspace_id) AS (
    (SELECT workspace_id FROM extraction_events ORDER BY workspace_id LIMIT 1)
    UNION ALL
    SELECT (SELECT t.workspace_id FROM extraction_events t
            WHERE t.workspace_id > w.workspace_id ORDER BY t.workspace_id LIMIT 1)
    FROM events_ws w WHERE w.workspace_id IS NOT NULL
),
expected_ws (workspace_id) AS (
    (SELECT workspace_id FROM expected_connectors ORDER BY workspace_id LIMIT 1)
    UNION ALL
    SELECT (SELECT t.workspace_id FROM expected_connectors t
            WHERE t.workspace_id > w.workspace_id ORDER BY t.workspace_id LIMIT 1)
    FROM expected_ws w WHERE w.workspace_id IS NOT NULL
)
SELECT workspace_id FROM (
    SELECT workspace_id FROM runs_ws
    UNION SELECT workspace_id FROM tables_ws
    UNION SELECT workspace_id FROM transforms_ws
    UNION SELECT workspace_id FROM events_ws
    UNION SELECT workspace_id FROM expected_ws
) AS w
WHERE workspace_id IS NOT NULL
ORDER BY workspace_id COLLATE "C";

-- name: snapshot_source_runs
-- The latest 'ok' run of each source: the only run the gap rules read.
SELECT DISTINCT ON (workspace_id, source_id) workspace_id, source_id, status, started_at, finished_at
FROM source_runs
WHERE workspace_id = ANY(%(workspace_ids)s::text[]) AND status = 'ok'
ORDER BY workspace_id, source_id, started_at DESC, id DESC;

-- name: snapshot_bronze_tables
SELECT workspace_id, source_id, table_name AS "table", selected, processed_at
FROM bronze_tables
WHERE workspace_id = ANY(%(workspace_ids)s::text[]);

-- name: snapshot_transforms
SELECT workspace_id, transform_id, layer, inputs, last_run_at
FROM transforms
WHERE workspace_id = ANY(%(workspace_ids)s::text[]);

-- name: workspace_events
-- The events a Python health computation needs: every event finished by as_of.
SELECT workspace_id, connector_id, run_id, operation, started_at, duration_ms, status
FROM extraction_events
WHERE workspace_id = ANY(%(workspace_ids)s::text[]) AND finished_at <= %(as_of)s;

-- name: expected_connectors
SELECT workspace_id, connector_id
FROM expected_connectors
WHERE workspace_id = ANY(%(workspace_ids)s::text[])
ORDER BY workspace_id COLLATE "C", connector_id COLLATE "C";

-- name: disable_jit
-- For the rest of the transaction: connector_health's cost estimate triggers JIT compilation, which
-- takes far longer (seconds) than running the query (milliseconds).
SELECT set_config('jit', 'off', true);

-- name: connector_health
-- The same rows as health.connector_health(events, as_of, window, expected) for the workspaces'
-- events and expected connectors. Parameters: as_of; window_start = as_of - window (computed in
-- Python, so a day is 24 hours whatever the session's time zone); the status thresholds as
-- fractions failing_num/failing_den and degraded_num/degraded_den. Only events finished by as_of
-- exist; a run is in the window when its last finish is in (window_start, as_of].
-- One pass, like the Python computation: every event finished by as_of is read once, in the order
-- of extraction_events_by_run (index-only, no sort), and aggregated per run, then per connector.
-- Looking up each recent run's events separately (an index probe per run) was 3x slower; and a
-- connector whose runs all ended before the window must be listed anyway, so the old events are
-- read in any case.
WITH runs AS (
    SELECT e.workspace_id, e.connector_id,
           min(e.started_at) AS started_at,
           max(e.finished_at) AS finished_at,
           bool_or(e.status = 'error' COLLATE "C") AS failed  -- "C": no collation lookup per event
    FROM extraction_events e
    WHERE e.workspace_id = ANY(%(workspace_ids)s::text[]) AND e.finished_at <= %(as_of)s
    GROUP BY e.workspace_id, e.connector_id, e.run_id
),
per_connector AS (
    -- every connector with an event finished by as_of; runs = 0 when none of its runs is in the
    -- window. Durations are computed for the runs in the window only (numeric to float8 is costly).
    SELECT workspace_id, connector_id,
           count(*) FILTER (WHERE finished_at > %(window_start)s) AS runs,
           count(*) FILTER (WHERE finished_at > %(window_start)s AND failed) AS failed_runs,
           percentile_cont(0.5) WITHIN GROUP (
               ORDER BY (extract(epoch FROM finished_at - started_at) * 1000)::float8
           ) FILTER (WHERE finished_at > %(window_start)s) AS p50_ms,
           percentile_cont(0.95) WITHIN GROUP (
               ORDER BY (extract(epoch FROM finished_at - started_at) * 1000)::float8
           ) FILTER (WHERE finished_at > %(window_start)s) AS p95_ms,
           max(finished_at) FILTER (WHERE finished_at > %(window_start)s) AS last_run_at,
           max(finished_at) FILTER (WHERE finished_at > %(window_start)s AND NOT failed) AS last_ok_at
    FROM runs
    GROUP BY workspace_id, connector_id
),
expected AS (
    SELECT workspace_id, connector_id FROM expected_connectors
    WHERE workspace_id = ANY(%(workspace_ids)s::text[])
),
connectors AS (
    -- the connectors seen and the expected ones, each once (a merge join, both sides in key order)
    SELECT coalesce(p.workspace_id, x.workspace_id) AS workspace_id,
           coalesce(p.connector_id, x.connector_id) AS connector_id,
           p.runs, p.failed_runs, p.p50_ms, p.p95_ms, p.last_run_at, p.last_ok_at
    FROM per_connector p
    FULL JOIN expected x ON x.workspace_id = p.workspace_id AND x.connector_id = p.connector_id
)
SELECT workspace_id,
       connector_id,
       coalesce(runs, 0)::integer AS runs,
       coalesce(failed_runs, 0)::integer AS failed_runs,
       failed_runs::float8 / nullif(runs, 0) AS error_rate,
       p50_ms,
       p95_ms,
       last_run_at,
       extract(epoch FROM %(as_of)s::timestamptz - last_ok_at)::float8 AS freshness_seconds,
       CASE
           WHEN coalesce(runs, 0) = 0 THEN 'stopped'
           WHEN failed_runs * %(failing_den)s::bigint >= runs * %(failing_num)s::bigint THEN 'failing'
           WHEN failed_runs * %(degraded_den)s::bigint >= runs * %(degraded_num)s::bigint THEN 'degraded'
           ELSE 'healthy'
       END AS status
FROM connectors
ORDER BY workspace_id COLLATE "C", connector_id COLLATE "C";

-- name: insert_source_run
INSERT INTO source_runs (workspace_id, source_id, status, started_at, finished_at)
VALUES (%(workspace_id)s, %(source_id)s, %(status)s, %(started_at)s, %(finished_at)s)
RETURNING id;

-- name: finish_source_run
UPDATE source_runs SET status = %(status)s, finished_at = %(finished_at)s
WHERE workspace_id = %(workspace_id)s AND id = %(id)s
RETURNING id;

-- name: upsert_bronze_table
-- processed_at only moves forward (GREATEST ignores nulls): registering a table again never
-- forgets that it was loaded.
INSERT INTO bronze_tables AS b (workspace_id, source_id, table_name, selected, processed_at)
VALUES (%(workspace_id)s, %(source_id)s, %(table)s, %(selected)s, %(processed_at)s)
ON CONFLICT (workspace_id, source_id, table_name) DO UPDATE
SET selected = EXCLUDED.selected,
    processed_at = GREATEST(b.processed_at, EXCLUDED.processed_at);

-- name: upsert_transform
-- last_run_at only moves forward; layer and inputs take the new values.
INSERT INTO transforms AS t (workspace_id, transform_id, layer, inputs, last_run_at)
VALUES (%(workspace_id)s, %(transform_id)s, %(layer)s, %(inputs)s::text[], %(last_run_at)s)
ON CONFLICT (workspace_id, transform_id) DO UPDATE
SET layer = EXCLUDED.layer,
    inputs = EXCLUDED.inputs,
    last_run_at = GREATEST(t.last_run_at, EXCLUDED.last_run_at);

-- name: insert_extraction_event
INSERT INTO extraction_events (workspace_id, connector_id, run_id, operation, started_at, duration_ms, status)
VALUES (%(workspace_id)s, %(connector_id)s, %(run_id)s, %(operation)s, %(started_at)s, %(duration_ms)s, %(status)s);

-- name: upsert_expected_connector
INSERT INTO expected_connectors (workspace_id, connector_id)
VALUES (%(workspace_id)s, %(connector_id)s)
ON CONFLICT DO NOTHING;

-- name: upsert_reports
-- One report per (workspace, as_of): a re-run of the same as_of replaces it. reports: a JSON array,
-- one object per report: workspace_id, findings_count, new_findings, health (an array), summary.
-- JSON rather than parallel arrays: the driver encodes a text array in Python, escaping every element,
-- while json.dumps encodes the whole batch in C (and both psycopg 2 and 3 pass it as one text value).
INSERT INTO reconciliation_reports AS r
    (workspace_id, as_of, window_seconds, findings_count, new_findings, health, summary)
SELECT u.workspace_id, %(as_of)s, %(window_seconds)s, u.findings_count, u.new_findings, u.health, u.summary
FROM json_to_recordset(%(reports)s::json)
     AS u (workspace_id text, findings_count integer, new_findings integer, health jsonb, summary text)
ON CONFLICT (workspace_id, as_of) DO UPDATE
SET window_seconds = EXCLUDED.window_seconds,
    created_at = now(),
    findings_count = EXCLUDED.findings_count,
    new_findings = EXCLUDED.new_findings,
    health = EXCLUDED.health,
    summary = EXCLUDED.summary
RETURNING id, workspace_id;

-- name: delete_report_findings
-- Before (re)writing the findings of reports: arrays report_ids and workspace_ids.
DELETE FROM reconciliation_findings
WHERE workspace_id = ANY(%(workspace_ids)s::text[]) AND report_id = ANY(%(report_ids)s::bigint[]);

-- name: insert_findings
-- findings: a JSON array (as for upsert_reports), one object per finding: report_id and the fields
-- of Finding.to_dict(), timestamps in ISO 8601 with an offset.
INSERT INTO reconciliation_findings
    (report_id, workspace_id, layer, kind, subject, expected_after, observed_at, action)
SELECT f.report_id, f.workspace_id, f.layer, f.kind, f.subject, f.expected_after, f.observed_at, f.action
FROM json_to_recordset(%(findings)s::json)
     AS f (report_id bigint, workspace_id text, layer text, kind text, subject text,
           expected_after timestamptz, observed_at timestamptz, action text);

-- name: previous_findings
-- The findings of each workspace's latest report before as_of (to tell which findings are new).
SELECT f.workspace_id, f.layer, f.kind, f.subject
FROM unnest(%(workspace_ids)s::text[]) AS ws (workspace_id)
CROSS JOIN LATERAL (
    SELECT r.id FROM reconciliation_reports r
    WHERE r.workspace_id = ws.workspace_id AND r.as_of < %(as_of)s
    ORDER BY r.as_of DESC, r.id DESC
    LIMIT 1
) AS p
JOIN reconciliation_findings f ON f.workspace_id = ws.workspace_id AND f.report_id = p.id;

-- name: latest_report
SELECT id, workspace_id, as_of, window_seconds, created_at, findings_count, new_findings, health, summary
FROM reconciliation_reports
WHERE workspace_id = %(workspace_id)s
ORDER BY as_of DESC, id DESC
LIMIT 1;

-- name: latest_reports
-- The latest report of each of the given workspaces.
SELECT r.id, r.workspace_id, r.as_of, r.window_seconds, r.created_at, r.findings_count, r.new_findings,
       r.health, r.summary
FROM unnest(%(workspace_ids)s::text[]) AS ws (workspace_id)
CROSS JOIN LATERAL (
    SELECT * FROM reconciliation_reports x
    WHERE x.workspace_id = ws.workspace_id
    ORDER BY x.as_of DESC, x.id DESC
    LIMIT 1
) AS r
ORDER BY r.workspace_id COLLATE "C";

-- name: report_history
-- A workspace's reports, newest first, with their open findings per layer (for charts).
SELECT r.id, r.workspace_id, r.as_of, r.window_seconds, r.created_at, r.findings_count, r.new_findings,
       r.health,
       count(f.report_id) FILTER (WHERE f.layer = 'bronze')::integer AS bronze_findings,
       count(f.report_id) FILTER (WHERE f.layer = 'silver')::integer AS silver_findings,
       count(f.report_id) FILTER (WHERE f.layer = 'gold')::integer AS gold_findings
FROM reconciliation_reports r
LEFT JOIN reconciliation_findings f
    ON f.report_id = r.id AND f.workspace_id = %(workspace_id)s
WHERE r.workspace_id = %(workspace_id)s
GROUP BY r.id
ORDER BY r.as_of DESC, r.id DESC
LIMIT %(limit)s;

-- name: report_findings
-- One report's findings in report order (layer bronze, silver, gold; then subject).
SELECT workspace_id, layer, kind, subject, expected_after, observed_at, action
FROM reconciliation_findings
WHERE workspace_id = %(workspace_id)s AND report_id = %(report_id)s
ORDER BY array_position(ARRAY['bronze', 'silver', 'gold'], layer), subject COLLATE "C", kind;

-- name: report_workspaces
-- The plugin pages' workspace selector: every workspace with a stored report, by a loose index scan
-- of reconciliation_reports_newest. Like list_workspaces it returns ids only, never a workspace's rows;
-- the pages then read each workspace with the statements below, all filtered by workspace id.
WITH RECURSIVE ws (workspace_id) AS (
    (SELECT workspace_id FROM reconciliation_reports ORDER BY workspace_id LIMIT 1)
    UNION ALL
    SELECT (SELECT r.workspace_id FROM reconciliation_reports r
            WHERE r.workspace_id > ws.workspace_id ORDER BY r.workspace_id LIMIT 1)
    FROM ws WHERE ws.workspace_id IS NOT NULL
)
SELECT workspace_id FROM ws WHERE workspace_id IS NOT NULL ORDER BY workspace_id COLLATE "C";

-- name: workspace_report
-- One report of a workspace, by id (a report of another workspace is not found).
SELECT id, workspace_id, as_of, window_seconds, created_at, findings_count, new_findings, health, summary
FROM reconciliation_reports
WHERE workspace_id = %(workspace_id)s AND id = %(report_id)s;
