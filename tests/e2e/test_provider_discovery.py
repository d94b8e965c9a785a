"""Airflow's own discovery finds the provider, its plugin and its console script."""

from __future__ import annotations

import json
import os
import subprocess

from airflow_retry_provider import __version__, get_provider_info
from tests.conftest import VENV_BIN, run_airflow_cli


def test_provider_info_names_the_package():
    """get_provider_info() carries the fields ProvidersManager reads."""
    info = get_provider_info()
    assert info["package-name"] == "airflow-retry-provider"
    assert info["versions"] == [__version__]
    assert info["name"] and info["description"]


def test_airflow_providers_list_shows_the_provider():
    """``airflow providers list`` lists airflow-retry-provider with its version."""
    result = run_airflow_cli("providers", "list", "--output", "json")
    assert result.returncode == 0, result.stderr
    providers = {row["package_name"]: row for row in json.loads(result.stdout)}
    assert providers["airflow-retry-provider"]["version"] == __version__


def test_airflow_plugins_lists_the_plugin():
    """``airflow plugins`` lists the plugin loaded from the airflow.plugins entry point."""
    result = run_airflow_cli("plugins", "--output", "json")
    assert result.returncode == 0, result.stderr
    names = {row["name"] for row in json.loads(result.stdout)}
    assert "retry_provider" in names


def test_console_script_version_and_help():
    """``airflow-retry --version`` prints the version; ``--help`` lists the subcommands."""
    version = subprocess.run([str(VENV_BIN / "airflow-retry"), "--version"], capture_output=True, text=True)
    assert version.returncode == 0
    assert version.stdout.strip() == f"airflow-retry {__version__}"
    helptext = subprocess.run([str(VENV_BIN / "airflow-retry"), "--help"], capture_output=True, text=True)
    assert helptext.returncode == 0
    for command in ("db", "demo"):
        assert command in helptext.stdout


def test_airflow_config_shows_the_provider_settings_and_reads_airflow_cfg(tmp_path):
    """``airflow config list`` shows every [retry_provider] default; ``get-value`` reads airflow.cfg."""
    from airflow_retry_provider import settings

    listed = run_airflow_cli("config", "list", "--section", "retry_provider", "--show-values", "--defaults")
    assert listed.returncode == 0, listed.stderr
    for setting in settings.SETTINGS:
        assert f"{setting.key} = {setting.default}".rstrip() in listed.stdout

    (tmp_path / "airflow.cfg").write_text("[retry_provider]\nui_timezone = Asia/Tokyo\n")
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path), "AIRFLOW_CONFIG": str(tmp_path / "airflow.cfg")}
    read = _run_in(env, "airflow", "config", "get-value", "retry_provider", "ui_timezone")
    assert read.returncode == 0, read.stderr
    assert read.stdout.strip() == "Asia/Tokyo"
    provider = _run_in(
        env, "python", "-c", "from airflow_retry_provider import settings; print(settings.ui_timezone())"
    )
    assert provider.returncode == 0, provider.stderr
    assert provider.stdout.strip() == "Asia/Tokyo"


def _run_in(env: dict[str, str], program: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``program`` of this virtualenv with ``args``, in ``env``."""
    return subprocess.run(
        [str(VENV_BIN / program), *args], capture_output=True, text=True, timeout=300, env=env
    )
