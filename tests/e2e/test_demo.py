"""``airflow-retry demo --once`` (what ``make demo ARGS=--once`` runs) works end to end and leaves nothing running."""

from __future__ import annotations

import re
import subprocess

import psutil
import pytest

from tests.conftest import REPO, VENV_BIN


def _processes_under(path: str) -> list[str]:
    found = []
    for proc in psutil.process_iter(["cmdline", "environ"]):
        try:
            cmdline = " ".join(proc.info["cmdline"] or [])
            home = (proc.info["environ"] or {}).get("AIRFLOW_HOME", "")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if path in cmdline or home.startswith(path):
            found.append(f"{proc.pid}: {cmdline}")
    return found


@pytest.mark.e2e
def test_demo_once_prints_summary_and_stops_everything(tmp_path, monkeypatch):
    """The demo runs the example DAG in a real Airflow, prints the summary and exits 0 with no process left."""
    monkeypatch.delenv("AIRFLOW_RETRY_PG_DSN", raising=False)  # the demo starts its own cluster
    workdir = tmp_path / "demo"
    result = subprocess.run(
        [
            str(VENV_BIN / "airflow-retry"),
            "demo",
            "--once",
            "--workdir",
            str(workdir),
            "--dags-folder",
            str(REPO / "dags"),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    assert "=== airflow-retry-provider demo ===" in result.stdout
    assert "example_retry_pipeline" in result.stdout
    assert "Airflow UI: http://127.0.0.1:" in result.stdout
    assert "login admin / admin" in result.stdout
    assert re.search(r"load_bronze_positions\s+success\s+tries=2", result.stdout), result.stdout[-3000:]
    assert re.search(r"gold_risk_report\s+failed\s+tries=1", result.stdout), result.stdout[-3000:]
    assert _processes_under(str(workdir)) == []
    cluster = re.search(r"PostgreSQL cluster in (\S+) on port", result.stderr)
    assert cluster, result.stderr[-2000:]
    assert _processes_under(cluster.group(1)) == []
