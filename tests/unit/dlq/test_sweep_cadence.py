"""dlq/deliveries.py's SWEEP_CADENCE is the sweeper DAG's schedule: the lost alert's timing rests on it."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import airflow_retry_provider
from airflow_retry_provider.dlq.deliveries import SWEEP_CADENCE


def test_the_documented_cadence_is_the_sweeper_dags_schedule():
    """The sweeper DAG runs every N minutes and SWEEP_CADENCE says N minutes (change both, and the docs)."""
    source = (Path(airflow_retry_provider.__file__).parent / "dags" / "dead_letter_sweeper.py").read_text()
    match = re.search(r'schedule="\*/(\d+) \* \* \* \*"', source)
    assert match is not None, "the sweeper's schedule is no longer '*/N * * * *'"
    assert timedelta(minutes=int(match[1])) == SWEEP_CADENCE
