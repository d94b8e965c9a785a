"""tools/bootstrap.sh: what `make demo`, `make test` and `.ci/run` need, installed or named in one line."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "bootstrap.sh"


def _run(*needs: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path or os.environ["PATH"]}
    env.pop("AIRFLOW_RETRY_PG_DSN", None)
    return subprocess.run(
        [shutil.which("bash") or "/bin/bash", str(SCRIPT), *needs],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_nothing_to_do_when_everything_is_there():
    """On a machine that has PostgreSQL, Chromium and Redis (this one) it says nothing and exits 0."""
    if not (shutil.which("chromium") and shutil.which("redis-server")):
        pytest.fail("this test runs where make test runs: chromium and redis-server are installed")
    done = _run("postgres", "chromium", "redis")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_without_apt_get_it_names_the_command_in_one_line(tmp_path):
    """Where it cannot install (no apt-get), it stops with one line naming the packages and the command."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("id", "ls"):  # what the script runs besides bash builtins; no apt-get, no chromium
        (bin_dir / tool).symlink_to(shutil.which(tool) or f"/usr/bin/{tool}")
    done = _run("chromium", "redis", path=str(bin_dir))
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "missing chromium redis-server: run 'sudo apt-get install chromium redis-server'" in lines[0]


def test_an_unknown_need_is_refused_by_name():
    """A typo in the Makefile is an error naming it, not a silent pass."""
    done = _run("postgress")
    assert done.returncode == 2
    assert "unknown need 'postgress'" in done.stderr
