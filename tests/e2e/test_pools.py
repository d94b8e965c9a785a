"""``airflow-retry pools sync`` against a real Airflow api-server: creates, reports drift, and is safe twice."""

from __future__ import annotations

import pytest

from airflow_retry_provider.cli import main
from devstack.airflow import ADMIN_PASSWORD, ADMIN_USER, AirflowStack
from tests.conftest import running_airflow

DEPS = """
weights: {heavy: 2, light: 1}
dependencies:
  positions_db: {slots: 2, description: one heavy or two light extractions}
  partner_api: {slots: 4, include_deferred: true, description: 4 concurrent requests}
"""


@pytest.fixture(scope="module")
def stack(pg_server, tmp_path_factory):
    """A real Airflow (api-server and friends) on fresh databases of the session's PostgreSQL."""
    with running_airflow(pg_server, tmp_path_factory.mktemp("pools-airflow"), "pools") as airflow:
        yield airflow.stack


def _pools(stack: AirflowStack) -> dict[str, tuple]:
    pools = stack.api("GET", "/api/v2/pools")["pools"]
    return {p["name"]: (p["slots"], p["include_deferred"], p["description"]) for p in pools}


def _sync(tmp_path, capsys, *flags: str) -> str:
    path = tmp_path / "deps.yaml"
    path.write_text(DEPS)
    assert main(["pools", "sync", "--file", str(path), *flags]) == 0
    return capsys.readouterr().out


def test_sync_twice_gives_the_same_pools(stack, tmp_path, capsys, monkeypatch):
    """The first sync creates the pools, the second changes nothing; drift is reported and repaired."""
    monkeypatch.setenv(
        "AIRFLOW_CONN_RETRY_PROVIDER_AIRFLOW_API",
        f"http://{ADMIN_USER}:{ADMIN_PASSWORD}@127.0.0.1:{stack.api_port}",
    )
    dry = _sync(tmp_path, capsys, "--dry-run")
    assert "would create partner_api" in dry and "would create positions_db" in dry
    assert "positions_db" not in _pools(stack)  # a dry run changes nothing

    first = _sync(tmp_path, capsys)
    pools = _pools(stack)
    assert pools["positions_db"] == (2, False, "one heavy or two light extractions")
    assert pools["partner_api"] == (4, True, "4 concurrent requests")
    assert "create positions_db" in first and "2 changed" in first

    second = _sync(tmp_path, capsys)
    assert _pools(stack) == pools
    assert "0 changed, 2 in sync" in second

    someone_else = {"name": "positions_db", "slots": 5, "include_deferred": False, "description": "edited"}
    stack.api("PATCH", "/api/v2/pools/positions_db", json=someone_else)
    drift = _sync(tmp_path, capsys, "--dry-run")
    assert "would update positions_db: slots 5 -> 2, description 'edited' -> 'one heavy" in drift
    _sync(tmp_path, capsys)
    assert _pools(stack) == pools


def test_flags_override_the_connection_and_bad_login_is_a_usage_error(stack, tmp_path, capsys):
    """--api-url/--api-user/--api-password work without the env var; a wrong password exits 2 with the reason."""
    path = tmp_path / "deps.yaml"
    path.write_text(DEPS)
    args = ["pools", "sync", "--file", str(path), "--api-url", stack.base_url, "--api-user", ADMIN_USER]
    assert main([*args, "--api-password", ADMIN_PASSWORD, "--dry-run"]) == 0
    assert main([*args, "--api-password", "wrong"]) == 2
    assert "refused a token for user 'admin'" in capsys.readouterr().err
