"""Airflow's own discovery finds the provider, its plugin and its console script."""

from __future__ import annotations

import json
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
