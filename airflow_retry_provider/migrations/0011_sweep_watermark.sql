-- 0011: sweeps whose REST cost follows change (issue 46). One row per sweep kind keeps, so any
-- process continues it: how far the stream of ended task instances was read (Airflow's own end_date,
-- never this host's clock; a sweep that caught up reads again from watermark minus the overlap and
-- dedupes), how many rows at exactly that end_date were already read (a page of ties never loops),
-- whether the last read caught up, and when the current full pass over the letters at rest began.
CREATE TABLE IF NOT EXISTS retry_sweep_state (
    name TEXT PRIMARY KEY,
    watermark TIMESTAMPTZ,
    watermark_skip INTEGER NOT NULL DEFAULT 0 CHECK (watermark_skip >= 0),
    caught_up BOOLEAN NOT NULL DEFAULT true,
    pass_started_at TIMESTAMPTZ,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
