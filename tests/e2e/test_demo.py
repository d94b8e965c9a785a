"""``airflow-retry demo --once`` (what ``make demo ARGS=--once`` runs) tells its story end to end and leaves nothing running."""

from __future__ import annotations

import os
import re
import subprocess

import psutil
import pytest

from tests.conftest import REPO, VENV_BIN
from tests.e2e.conftest import StatsdListener


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
def test_demo_once_tells_the_story_and_stops_everything(tmp_path, monkeypatch):
    """The demo prints each of its five steps (retry and poison letter, gap and healthy connector, e-mail, replay, resolved) and exits 0 with no process left."""
    monkeypatch.delenv("AIRFLOW_RETRY_PG_DSN", raising=False)  # the demo starts its own cluster
    workdir = tmp_path / "demo"
    statsd = StatsdListener()  # the demo's Airflow sends its metrics here: the reconciliation's findings too
    metrics_env = {
        "AIRFLOW__METRICS__STATSD_ON": "True",
        "AIRFLOW__METRICS__STATSD_HOST": "127.0.0.1",
        "AIRFLOW__METRICS__STATSD_PORT": str(statsd.port),
        "AIRFLOW__METRICS__STATSD_PREFIX": "airflow",
    }
    try:
        result = _run_demo(workdir, {**os.environ, **metrics_env})
    finally:
        statsd.close()
    _check_story(result, workdir)
    # the gold gap the demo reports went out on the wire too (at least once: UDP may drop, never add)
    findings = statsd.counters("airflow.retry_provider.reconciliation.finding.")
    assert findings.get("airflow.retry_provider.reconciliation.finding.gold.missing", 0) >= 1, findings


def _run_demo(workdir, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
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
        env=env,
    )


def _check_story(result: subprocess.CompletedProcess[str], workdir) -> None:
    out = result.stdout
    assert result.returncode == 0, out[-3000:] + result.stderr[-5000:]
    assert "=== airflow-retry-provider demo ===" in out
    # step 1: one transient failure retried with its delay and reason, one poison task filed
    assert out.index("--- step 1: the pipeline") < out.index("--- step 2: the reconciliation")
    assert re.search(r"load_bronze_positions\s+success\s+tries=2", out), out[-3000:]
    assert re.search(r"try 1: failed, retry after \d+\.\d{3}s: .*retryable/connection-failed", out), out[
        -3000:
    ]
    assert re.search(r"gold_risk_report\s+failed\s+tries=1", out), out[-3000:]
    # the poison task's try 1 says why, and names its letter; a task that never ran says so
    assert re.search(r"try 1: failed: .*poison/not-found", out), out[-3000:]
    assert re.search(r"letter #\d+ \[dlq\] poison/not-found", out), out[-3000:]
    assert re.search(r"publish_risk_report\s+did not run \(upstream_failed\)", out), out[-3000:]
    assert "try 0" not in out
    assert re.search(r"#(\d+) example_retry_pipeline\.gold_risk_report \[dlq\] not-found", out), out[-3000:]
    # step 2: the reconciliation as of after the pipeline: a real gap, the connector healthy with its figures
    assert "dead_letter_sweeper unpaused" in result.stderr
    assert re.search(r"demo: [1-9]\d* finding\(s\) as of", out), out[-3000:]
    assert "gold missing gold_risk_report: Run gold transform 'gold_risk_report', which has never run." in out
    assert re.search(
        r"connector positions_api healthy: [1-9]\d* run\(s\), 0 failed, p50 \d+ ms, p95 \d+ ms, freshness \d+ s",
        out,
    ), out[-3000:]
    # step 3: the alert e-mail for the new root cause, received by the demo's SMTP server
    step3 = out.index("--- step 3: the alert for the new root cause")
    assert re.search(
        r"Subject: New root cause: poison/not-found in example_retry_pipeline\.gold_risk_report", out[step3:]
    ), out[step3:]
    # step 4: the fix deployed, the replay previewed (with downstream) and done, the run success
    step4 = out.index("--- step 4: deploy the fix")
    story = out[step4:]
    assert "Preview: 1 letter(s), 2 task instance(s) to clear:" in story, story
    assert "gold_risk_report (now failed)" in story and "publish_risk_report (now upstream_failed)" in story
    assert re.search(r"Replay job \d+ done: \{'cleared': 1\}", story), story
    assert re.search(r"example_retry_pipeline  run \S+  state=success", story), story
    assert re.search(r"gold_risk_report\s+success\s+tries=2", story), story
    assert re.search(r"publish_risk_report\s+success\s+tries=1", story), story
    # step 5: the letter resolved, with its history
    step5 = out.index("--- step 5: the letter resolved")
    letter = out[step5:]
    assert re.search(r"Letter #\d+ example_retry_pipeline\.gold_risk_report \[resolved\]", letter), letter
    assert [e for e in ("filed", "claimed", "cleared", "resolved") if re.search(rf"\d\s+{e}\s", letter)] == [
        "filed",
        "claimed",
        "cleared",
        "resolved",
    ], letter
    # the pages, each with its URL
    base = re.search(r"Airflow UI: (http://127\.0\.0\.1:\d+)  \(login admin / admin\)", out)
    assert base, out[-3000:]
    for page in (
        "Dead letters: {base}/retry-provider/",
        "(gold_risk_report): {base}/retry-provider/letters/",
        "Medallion gaps: {base}/retry-provider/medallion-gaps?workspace_id=demo",
        "Connector health: {base}/retry-provider/connector-health?workspace_id=demo",
    ):
        assert page.format(base=base.group(1)) in out, out[-3000:]
    assert _processes_under(str(workdir)) == []
    cluster = re.search(r"PostgreSQL cluster in (\S+) on port", result.stderr)
    assert cluster, result.stderr[-2000:]
    assert _processes_under(cluster.group(1)) == []
