"""bench/impact.py's DAGs (no Airflow started): the provider's delivery and Airflow's DeadlineAlert are one instant."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.unit.bench_modules import BENCH, import_bench


@pytest.mark.parametrize(
    ("logical", "lead"),
    [
        (datetime(2026, 12, 3, 13, 17, 5, tzinfo=timezone.utc), 480),  # the same day, rounded up to 13:26
        (datetime(2026, 12, 3, 23, 58, 0, tzinfo=timezone.utc), 480),  # past midnight: days_after is 1
    ],
)
def test_the_bench_dag_gives_the_delivery_and_airflows_deadline_alert_one_instant(monkeypatch, logical, lead):
    """The chain's DeliveryDeadline and its DAG's DeadlineAlert (logical date + interval) resolve to the same minute."""
    from airflow.dag_processing.dagbag import DagBag

    (impact,) = import_bench("impact")
    deadline = impact.deadline_for(logical, lead)
    assert deadline.second == 0 and 0 <= (deadline - logical).total_seconds() - lead < 60
    for name, value in impact.dag_env(logical, deadline).items():
        monkeypatch.setenv(name, value)
    bag = DagBag(str(Path(BENCH) / "impact_dags"))
    assert bag.import_errors == {}
    chain = bag.dags["impact_bench_chain"]
    [alert] = chain.deadline if isinstance(chain.deadline, list) else [chain.deadline]
    assert logical + alert.interval == deadline
    policy = chain.get_task("publish").retry_policy
    assert policy.deadline_for({"data_interval_end": logical}) == deadline
