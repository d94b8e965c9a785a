"""Both DAG bundles parse as the dag-processor parses them: in a process whose sys.path has no repository.

The pytest process has the repository root on sys.path, so a DAG file importing ``tests.…`` loads
here and fails in Airflow (it did: every e2e scenario DAG vanished on a clean clone). This test runs
Airflow's ``BundleDagBag`` in a fresh interpreter started outside the repository, with no PYTHONPATH.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO, TEST_DAGS

PARSE = """
import json, sys
from pathlib import Path
from airflow.dag_processing.dagbag import BundleDagBag
folder = Path(sys.argv[1])
bag = BundleDagBag(dag_folder=str(folder), bundle_path=folder)
print(json.dumps({"errors": {Path(k).name: v[-300:] for k, v in bag.import_errors.items()},
                  "dags": sorted(bag.dags)}))
"""


@pytest.mark.parametrize("folder", [REPO / "dags", TEST_DAGS], ids=["dags", "tests-dag_files"])
def test_bundle_parses_without_the_repository_on_sys_path(folder, tmp_path):
    """Every file of the bundle imports (no import error) and defines DAGs, outside the repository."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run(
        [sys.executable, "-c", PARSE, str(folder)],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # not the repository: nothing of it is importable but the installed package
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    parsed = json.loads(result.stdout.strip().splitlines()[-1])
    assert parsed["errors"] == {}, parsed["errors"]
    assert parsed["dags"], f"no DAG in {folder}"
