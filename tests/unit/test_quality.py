"""The quality gates configured in pyproject.toml hold: ruff (lint and format), mypy and import-linter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    "command",
    [
        ["ruff", "check", "."],  # lint rules, including S608 (no SQL built from strings)
        ["ruff", "format", "--check", "."],  # one formatting
        ["mypy"],  # type checks of airflow_retry_provider
        ["lint-imports"],  # the layers of docs/ARCHITECTURE.md ([tool.importlinter] contracts)
    ],
    ids=["ruff-check", "ruff-format", "mypy", "import-linter"],
)
def test_quality_gate_is_clean(command):
    """The tool reports no problem on the repository."""
    result = subprocess.run([str(BIN / command[0]), *command[1:]], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
