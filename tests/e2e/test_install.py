"""The wheel, installed as docs/INSTALL.md says, is a working provider in a real Airflow.

The wheel is built from the working tree into a temporary directory and installed into a fresh
virtualenv next to plain ``apache-airflow`` at the suite's version (every version pinned by a
constraints file made from the suite's ``pip freeze``, so pip resolves nothing). That virtualenv's
Airflow runs from a temporary working directory, with no PYTHONPATH, on a DAG folder holding one
user DAG and the one line of docs/INSTALL.md (written by the installed ``airflow-retry dags
install``): nothing of the repository is importable there. The
provider's database is a fresh one on the session's PostgreSQL, upgraded by the installed
``airflow-retry db upgrade``; the API connection signs in as a user of the role INSTALL.md names.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import uuid
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import httpx
import pytest

import airflow_retry_provider
from tests.conftest import REPO

pytestmark = pytest.mark.e2e

PACKAGE = REPO / "airflow_retry_provider"
INSTALL_DOC = REPO / "docs" / "INSTALL.md"
MAINTENANCE_LINE = "from airflow_retry_provider.dags.maintenance import *  # noqa: F403"
MAINTENANCE_DAGS = {
    "dead_letter_sweeper",
    "medallion_reconciliation",
    "retry_provider_retention",
    "retry_provider_work_sweeper",
}
API_USER, API_ROLE = "retry_api", "op"  # the least role docs/INSTALL.md names for the API user
USER_DAG = '''"""A user's DAG: one task with a retry profile, so the provider's cluster policy tags it."""

import pendulum
from airflow.sdk import DAG, task

from airflow_retry_provider import apply_profile

with DAG("user_pipeline", schedule=None, start_date=pendulum.datetime(2026, 1, 1), catchup=False):

    @task
    def load() -> str:
        return "loaded"

    apply_profile(load(), "report")

with DAG("user_poison", schedule=None, start_date=pendulum.datetime(2026, 1, 1), catchup=False):

    @task
    def publish() -> None:
        raise PermissionError("permission denied for table positions")  # poison: a letter at try 1

    apply_profile(publish(), "report")
'''
README_DAG = REPO / "dags" / "positions_daily.py"  # the README's complete DAG, word for word (test_docs)


@dataclass(frozen=True)
class Installed:
    """A fresh virtualenv holding the built wheel and plain apache-airflow."""

    wheel: Path
    bin: Path
    cwd: Path  # a directory outside the repository, where every process of it runs

    def env(self, **extra: str) -> dict[str, str]:
        """This process's environment, minus what would reach the repository or the suite's virtualenv."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '')}"
        return {**env, **extra}

    def run(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [str(self.bin / args[0]), *args[1:]],
            cwd=self.cwd,
            env=env or self.env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, f"{' '.join(args)}:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
        return result


def documented_install_commands() -> tuple[list[str], list[str]]:
    """The two ``pip`` lines of docs/INSTALL.md's console block: build the wheel, install it."""
    lines = [
        line.strip().removeprefix("$ ")
        for block in re.findall(r"```console\n(.*?)```", INSTALL_DOC.read_text(encoding="utf-8"), re.DOTALL)
        for line in block.splitlines()
        if line.strip().startswith("$ pip ")
    ]
    build, install = (shlex.split(line) for line in lines)
    assert build[:2] == ["pip", "wheel"] and install[:2] == ["pip", "install"], lines
    return build, install


def documented_connection_command(provider_dsn: str) -> list[str]:
    """The README's ``airflow connections add retry_provider_default --conn-uri ...``, on ``provider_dsn``."""
    (line,) = [
        line.strip().removeprefix("$ ").split("#")[0]
        for block in re.findall(
            r"```console[^\n]*\n(.*?)```", (REPO / "README.md").read_text(encoding="utf-8"), re.DOTALL
        )
        for line in block.splitlines()
        if line.strip().startswith("$ airflow connections add ")
    ]
    words = shlex.split(line)
    assert words[:4] == ["airflow", "connections", "add", "retry_provider_default"], words
    assert words[4] == "--conn-uri" and words[5].startswith("postgresql://"), words
    return [*words[:5], provider_dsn, *words[6:]]


def _pip(*args: str, cwd: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pip", *args], cwd=cwd, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, f"pip {' '.join(args)}:\n{result.stderr[-3000:]}"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    """Build the wheel (from a copy of the sources, so no build/ lands in the tree) and install it."""
    root = tmp_path_factory.mktemp("install")
    source = root / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(PACKAGE, source / PACKAGE.name, ignore=shutil.ignore_patterns("__pycache__"))
    build, install = documented_install_commands()
    _pip(*build[1:], cwd=source)  # pip wheel --no-deps --wheel-dir dist .
    (wheel,) = (source / "dist").glob("airflow_retry_provider-*.whl")

    # the suite's versions, minus the provider itself (an editable install of the repository)
    frozen = subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--exclude-editable"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    pins = [
        line
        for line in frozen
        if line and " @ " not in line and not line.startswith(("#", "-e", "airflow-retry-provider"))
    ]
    (root / "constraints.txt").write_text("\n".join(pins) + "\n")
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True, timeout=120)
    venv_pip = [str(root / "venv" / "bin" / "python"), "-m", "pip"]
    airflow_pin = f"apache-airflow=={metadata.version('apache-airflow')}"
    # the documented line, word for word, but for what must be local here: the suite's Airflow version,
    # its own constraints (offline), the wheel the glob names; and no .pyc compiled ahead
    args = [
        airflow_pin if word.startswith("apache-airflow==")
        else str(root / "constraints.txt") if word.startswith("https://raw.githubusercontent.com/apache/airflow/")
        else str(wheel) if word.startswith("dist/airflow_retry_provider-")
        else word
        for word in install[1:]
    ]  # fmt: skip
    result = subprocess.run(
        [*venv_pip, *args, "--quiet", "--no-compile", "--disable-pip-version-check"],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return Installed(wheel, root / "venv" / "bin", root)


def test_the_wheel_carries_every_file_the_package_reads(installed):
    """Every non-Python file of the package (SQL, migrations, templates, YAML, py.typed) and the DAGs are in the wheel."""
    data = {
        str(path.relative_to(REPO))
        for path in PACKAGE.rglob("*")
        if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts
    }
    assert any(name.endswith(".sql") for name in data) and any(name.endswith(".html") for name in data)
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    assert data - names == set()
    assert {
        "airflow_retry_provider/dags/maintenance.py",
        "airflow_retry_provider/dags/dead_letter_sweeper.py",
        "airflow_retry_provider/migrations/0001_initial.sql",
        "airflow_retry_provider/policy/default_rules.py",
    } <= names


def test_the_installed_package_is_the_wheel_not_the_repository(installed):
    """In the new virtualenv the package imports from its site-packages, and no path of the repository is on sys.path."""
    result = installed.run(
        "python",
        "-c",
        "import json, sys, airflow_retry_provider as p; print(json.dumps([p.__file__, sys.path]))",
    )
    where, path = json.loads(result.stdout.strip().splitlines()[-1])
    assert Path(where).is_relative_to(installed.bin.parent), where
    assert not [entry for entry in path if entry and Path(entry).resolve().is_relative_to(REPO)], path


@dataclass
class Deployment:
    installed: Installed
    stack: object  # devstack.airflow.AirflowStack
    upgrade_output: str
    provider_dsn: str


@pytest.fixture(scope="module")
def deployment(installed, pg_server, tmp_path_factory) -> Iterator[Deployment]:
    """A real Airflow from the new virtualenv, on a DAG folder of one user DAG and the documented line."""
    from devstack.airflow import AirflowStack

    assert MAINTENANCE_LINE in INSTALL_DOC.read_text(encoding="utf-8"), "docs/INSTALL.md lost its line"
    dags = tmp_path_factory.mktemp("install-dags")
    (dags / "user_pipeline.py").write_text(USER_DAG)
    shutil.copy(README_DAG, dags / README_DAG.name)
    installed.run("airflow-retry", "dags", "install", str(dags))  # the file of the documented line
    assert MAINTENANCE_LINE in (dags / "retry_provider_maintenance.py").read_text().splitlines()
    suffix = uuid.uuid4().hex[:8]
    metadata_db, provider_db = f"arp_install_meta_{suffix}", f"arp_install_prov_{suffix}"
    pg_server.create_database(metadata_db)
    provider_dsn = pg_server.create_database(provider_db)  # empty: the installed CLI creates the schema
    stack = AirflowStack(
        home=tmp_path_factory.mktemp("install-home"),
        dags_folder=dags,
        metadata_url=pg_server.sqlalchemy_url(metadata_db),
        provider_dsn=provider_dsn,
        users={API_USER: API_ROLE},
        executable=str(installed.bin / "airflow"),
        cwd=installed.cwd,
        provider_conn_in_env=False,  # added below with `airflow connections add`, as the README says
    )
    stack.extra_env = dict(
        PATH=installed.env()["PATH"],
        PYTHONPATH="",
        VIRTUAL_ENV=str(installed.bin.parent),
        # the deployment's own folder only, not the suite's bundles of dags/ and tests/dag_files
        AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST=json.dumps(
            [
                {
                    "name": "dags-folder",
                    "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle",
                    "kwargs": {"path": str(dags), "refresh_interval": 0},
                }
            ]
        ),
        AIRFLOW_CONN_RETRY_PROVIDER_AIRFLOW_API=(
            f"http://{API_USER}:{stack.password(API_USER)}@127.0.0.1:{stack.api_port}"
        ),
    )
    try:
        stack.migrate()
        # the README's order: the connection in Airflow's metadata database, then the CLI finds it there
        stack.run_cli(*documented_connection_command(provider_dsn)[1:])
        upgrade = installed.run("airflow-retry", "db", "upgrade", env=stack.env())
        stack.start()
        stack.wait_healthy()
        yield Deployment(installed, stack, upgrade.stdout, provider_dsn)
    finally:
        stack.stop()
        for database in (metadata_db, provider_db):
            pg_server.drop_database(database)


def test_db_upgrade_creates_the_schema(deployment):
    """The installed ``airflow-retry db upgrade`` takes the empty database to the newest version."""
    from airflow_retry_provider import migrations

    newest = migrations.latest_version()
    assert f"upgraded from version 0 to {newest}" in deployment.upgrade_output


def test_the_maintenance_dags_parse_from_the_one_line(deployment):
    """The dag-processor finds the four maintenance DAGs and the user's DAG, with no import error."""
    stack = deployment.stack
    for dag_id in (*sorted(MAINTENANCE_DAGS), "user_pipeline", "user_poison", "positions_daily"):
        stack.wait_for_dag(dag_id)
    assert stack.api("GET", "/api/v2/importErrors")["import_errors"] == []
    files = {dag["dag_id"]: dag["relative_fileloc"] for dag in stack.api("GET", "/api/v2/dags")["dags"]}
    assert files == {**dict.fromkeys(MAINTENANCE_DAGS, "retry_provider_maintenance.py"),
                     "user_pipeline": "user_pipeline.py", "user_poison": "user_pipeline.py",
                     "positions_daily": "positions_daily.py"}  # fmt: skip


def _run_to_the_end(stack, dag_id: str) -> dict:
    stack.wait_for_dag(dag_id)
    stack.api("PATCH", f"/api/v2/dags/{dag_id}", json={"is_paused": False})
    run = stack.api("POST", f"/api/v2/dags/{dag_id}/dagRuns", json={"logical_date": None})
    return dict(stack.wait_for_run(dag_id, run["dag_run_id"], timeout=300))


def test_the_readmes_dag_runs_and_a_letter_reaches_the_connection_airflow_keeps(deployment):
    """The README's complete DAG succeeds in the installed Airflow; a poison task's letter is filed through
    the connection added with ``airflow connections add`` (no AIRFLOW_CONN_* anywhere in the stack)."""
    import psycopg

    stack = deployment.stack
    assert "AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT" not in stack.env()
    assert _run_to_the_end(stack, "positions_daily")["state"] == "success", stack.log_tail("scheduler")
    poisoned = _run_to_the_end(stack, "user_poison")
    assert poisoned["state"] == "failed"
    with psycopg.connect(deployment.provider_dsn) as conn:
        letters = conn.execute(
            "SELECT task_id, failure_class, filed_by FROM retry_dead_letters WHERE dag_id = 'user_poison' "
            "AND run_id = %s",
            (poisoned["dag_run_id"],),
        ).fetchall()
    assert letters == [("publish", "poison", "callback")]


def test_the_sweeper_runs_and_sweeps_the_users_dag(deployment):
    """A run of ``dead_letter_sweeper`` succeeds as the ``op`` API user and swept the profiled user DAG."""
    stack = deployment.stack
    stack.wait_for_dag("dead_letter_sweeper")
    stack.wait_for_dag("user_pipeline")
    stack.api("PATCH", "/api/v2/dags/dead_letter_sweeper", json={"is_paused": False})
    run = stack.api("POST", "/api/v2/dags/dead_letter_sweeper/dagRuns", json={"logical_date": None})
    final = stack.wait_for_run("dead_letter_sweeper", run["dag_run_id"], timeout=300)
    assert final["state"] == "success", stack.log_tail("scheduler")
    path = f"/api/v2/dags/dead_letter_sweeper/dagRuns/{run['dag_run_id']}/taskInstances/sweep_dead_letters"
    value = stack.api("GET", f"{path}/xcomEntries/return_value")["value"]
    report = json.loads(value) if isinstance(value, str) else value
    assert "user_pipeline" in report["dag_ids"]  # tagged by the wheel's cluster policy (apply_profile)
    assert report["errors"] == []


def test_the_plugin_pages_answer_when_signed_in(deployment):
    """The Dead letters page answers 200 to a signed-in user and refuses an anonymous one."""
    stack = deployment.stack
    page = httpx.get(
        f"{stack.base_url}/retry-provider/", headers={"Authorization": f"Bearer {stack.token()}"}, timeout=60
    )
    assert page.status_code == 200, page.text[:500]
    assert "Dead letters" in page.text
    anonymous = httpx.get(f"{stack.base_url}/retry-provider/", timeout=60)
    assert anonymous.status_code != 200 and "Dead letters" not in anonymous.text


def test_airflow_lists_the_provider_and_its_settings(deployment):
    """``airflow providers list`` shows the version; ``airflow config list`` has ``[retry_provider]``."""
    stack = deployment.stack
    with ThreadPoolExecutor(2) as pool:  # two CLI start-ups of ~10 s each, side by side
        providers_run = pool.submit(stack.run_cli, "providers", "list")
        config_run = pool.submit(stack.run_cli, "config", "list")
        providers, config = providers_run.result().stdout, config_run.result().stdout
    line = next((row for row in providers.splitlines() if "airflow-retry-provider" in row), "")
    assert airflow_retry_provider.__version__ in line, providers[-2000:]
    assert "[retry_provider]" in config
    assert "replay_rate_per_minute" in config.split("[retry_provider]", 1)[1]
