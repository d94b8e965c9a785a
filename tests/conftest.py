"""Session-wide test environment: an isolated AIRFLOW_HOME and one throwaway PostgreSQL.

The cluster is started in ``pytest_configure`` (before any test module imports Airflow), so
Airflow's metadata database is a real PostgreSQL too. ``AIRFLOW_RETRY_PG_DSN`` points the
suite at an existing server instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# the suite's Hypothesis profiles (no deadline; HYPOTHESIS_PROFILE=long for longer runs)
import tests.hypothesis_profiles  # noqa: F401

# the time of each layer at the end of the run, the e2e layer in one pytest-xdist worker under
# make test, and pytester for the summary's own test
pytest_plugins = ["tests.layer_times", "tests.parallel", "pytester"]

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
TEMPLATE_DB = f"arp_template_{os.getpid()}"
METADATA_DB = f"arp_airflow_{os.getpid()}"
PROVIDER_DB = f"arp_provider_{os.getpid()}"
METADATA_TEMPLATE_DB = f"arp_meta_template_{os.getpid()}"

TEST_DAGS = REPO / "tests" / "dag_files"

_state: dict[str, object] = {}


def bundle_config(*folders: Path) -> str:
    """Airflow's dag bundle list: the repository's dags/ ("dags-folder") plus the test DAGs."""
    names = ["dags-folder", "test-dags"]
    return json.dumps(
        [
            {
                "name": name,
                "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle",
                "kwargs": {"path": str(folder), "refresh_interval": 0},
            }
            for name, folder in zip(names, folders, strict=True)
        ]
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("numprocesses", None) and not hasattr(config, "workerinput"):
        return  # pytest-xdist's controller runs no test: each worker starts its own PostgreSQL
    from devstack import postgres

    home = Path(tempfile.mkdtemp(prefix="arp-airflow-home-"))
    _state["home"] = home
    server = postgres.server_from_env_or_start()
    _state["server"] = server
    server.create_database(METADATA_DB)
    server.create_database(TEMPLATE_DB)
    from airflow_retry_provider.dlq.schema import apply_schema

    with server.connect(TEMPLATE_DB, autocommit=False) as conn:
        apply_schema(conn)
    server.create_database(PROVIDER_DB, template=TEMPLATE_DB)
    os.environ.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
            "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
            "AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST": bundle_config(REPO / "dags", TEST_DAGS),
            "AIRFLOW__CORE__DEFAULT_TIMEZONE": "America/Sao_Paulo",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": server.sqlalchemy_url(METADATA_DB),
            "AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT": server.dsn(PROVIDER_DB),
        }
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    if "airflow.settings" in sys.modules:  # close Airflow's pooled connections while the server is up:
        from airflow import settings  # its atexit dispose_orm would print a traceback after the stop

        if getattr(settings, "async_engine", None) is not None:  # the api-server's routes, dag.test() on 3.4
            # dispose_orm closes the async pool's connections without an event loop, which
            # SQLAlchemy logs as MissingGreenlet for each: close them on a loop first
            import asyncio

            asyncio.run(settings.async_engine.dispose())
        settings.dispose_orm()
    server = _state.get("server")
    if server is not None:
        from devstack.postgres import PostgresServer

        assert isinstance(server, PostgresServer)
        if server.process is None:  # an external server: drop what we created
            for name in (METADATA_DB, PROVIDER_DB, TEMPLATE_DB, METADATA_TEMPLATE_DB):
                try:
                    server.drop_database(name)
                except Exception as exc:  # report, but never hide the test result
                    print(f"could not drop {name}: {exc}", file=sys.stderr)
        server.stop()
    home = _state.get("home")
    if isinstance(home, Path):
        shutil.rmtree(home, ignore_errors=True)


@dataclass(frozen=True)
class RunningAirflow:
    """A started Airflow stack and its provider database (with the provider's schema)."""

    stack: Any  # devstack.airflow.AirflowStack
    provider_db: str
    provider_dsn: str
    metadata_dsn: str


def migrated_metadata_template(pg_server: Any) -> str:
    """A database holding Airflow's migrated schema, made once per test process.

    ``airflow db migrate`` on an empty database costs tens of seconds on these machines; every stack
    of the process copies this one instead (``CREATE DATABASE ... TEMPLATE``), which takes a second.
    What the migration writes besides the schema (the default pool, the log template) follows the
    settings no test stack changes.
    """
    if not _state.get("metadata_template"):
        pg_server.create_database(METADATA_TEMPLATE_DB)
        env = {
            **os.environ,
            "AIRFLOW_HOME": tempfile.mkdtemp(prefix="arp-migrate-home-"),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": pg_server.sqlalchemy_url(METADATA_TEMPLATE_DB),
        }
        result = subprocess.run(
            [str(VENV_BIN / "airflow"), "db", "migrate"], env=env, capture_output=True, text=True, timeout=600
        )
        shutil.rmtree(env["AIRFLOW_HOME"], ignore_errors=True)
        if result.returncode != 0:
            raise RuntimeError(
                f"airflow db migrate failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
            )
        _state["metadata_template"] = METADATA_TEMPLATE_DB
    return METADATA_TEMPLATE_DB


@contextmanager
def running_airflow(
    pg_server: Any,
    home: Path,
    name: str,
    *,
    extra_env: dict[str, str] | None = None,
    prepare: Callable[[str], object] | None = None,
    stack_options: dict[str, Any] | None = None,
    before_start: Callable[[Any], object] | None = None,
) -> Iterator[RunningAirflow]:
    """A real Airflow (scheduler, dag-processor, api-server with two workers, triggerer; LocalExecutor) for a test module.

    Its metadata and provider databases are fresh databases of the session's PostgreSQL, copied from
    templates that hold Airflow's migrated schema and the provider's; it sees dags/ and tests/dag_files.
    ``prepare(provider_dsn)`` seeds data before the stack starts; ``stack_options`` go to
    :class:`AirflowStack` (e.g. a Celery ``broker_url``); ``before_start(stack)`` runs on the migrated
    metadata database before any component starts. On exit every process is
    stopped and both databases are dropped.
    """
    from devstack.airflow import AirflowStack

    suffix = uuid.uuid4().hex[:8]
    metadata_db, provider_db = f"arp_{name}_meta_{suffix}", f"arp_{name}_prov_{suffix}"
    pg_server.create_database(metadata_db, template=migrated_metadata_template(pg_server))
    provider_dsn = pg_server.create_database(provider_db, template=TEMPLATE_DB)
    stack = AirflowStack(
        home=home,
        dags_folder=TEST_DAGS,
        metadata_url=pg_server.sqlalchemy_url(metadata_db),
        provider_dsn=provider_dsn,
        extra_env={
            "AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST": bundle_config(REPO / "dags", TEST_DAGS),
            # two api-server workers, as deployments run: nothing may live in one worker's memory
            "AIRFLOW__API__WORKERS": "2",
            **(extra_env or {}),
        },
        **(stack_options or {}),
    )
    try:
        if prepare is not None:
            prepare(provider_dsn)
        if before_start is not None:
            before_start(stack)
        stack.start()
        stack.wait_healthy()
        yield RunningAirflow(stack, provider_db, provider_dsn, pg_server.dsn(metadata_db))
    finally:
        stack.stop()
        for database in (metadata_db, provider_db):
            pg_server.drop_database(database)


@pytest.fixture(scope="session")
def pg_server():
    """The session's PostgreSQL server (throwaway cluster or AIRFLOW_RETRY_PG_DSN)."""
    return _state["server"]


@contextmanager
def fresh_database(pg_server, template: str | None = TEMPLATE_DB) -> Iterator[str]:
    """A database of its own, a copy of ``template`` (the provider's schema; None: no table), dropped after."""
    name = f"arp_t_{uuid.uuid4().hex[:12]}"
    dsn = pg_server.create_database(name, template=template, replace=False)
    try:
        yield dsn
    finally:
        pg_server.drop_database(name)


@pytest.fixture
def pg_dsn(pg_server) -> Iterator[str]:
    """A fresh database holding the provider's schema, copied from the session's template."""
    with fresh_database(pg_server) as dsn:
        yield dsn


@pytest.fixture
def provider_conn(pg_dsn, monkeypatch) -> str:
    """Point Airflow's ``retry_provider_default`` connection at a fresh provider database."""
    monkeypatch.setenv("AIRFLOW_CONN_RETRY_PROVIDER_DEFAULT", pg_dsn)
    return pg_dsn


@pytest.fixture(autouse=True)
def _kept_connection_closed() -> Iterator[None]:
    """Each test ends as its task process does: the connection a retry policy kept (``database.kept``) is
    closed, so no test records or files on another test's database."""
    yield
    from airflow_retry_provider.database import close_kept

    close_kept()


@pytest.fixture(scope="session")
def airflow_db(pg_server) -> None:
    """Airflow's metadata database, migrated once per session: a copy of the migrated template."""
    pg_server.create_database(METADATA_DB, template=migrated_metadata_template(pg_server))


def run_airflow_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the ``airflow`` CLI of this virtualenv with the test environment."""
    return subprocess.run([str(VENV_BIN / "airflow"), *args], capture_output=True, text=True, timeout=300)


def metadata_dsn() -> str:
    """libpq DSN of Airflow's metadata database (the tests read retry_delay_override and retry_reason)."""
    return os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].replace(
        "postgresql+psycopg2://", "postgresql://", 1
    )


def task_tries(dag_id: str, run_id: str, task_id: str) -> list[tuple]:
    """Every try of one task instance: (try_number, state, retry_delay_override, retry_reason).

    Read as the demo and the e2e tests read them (``airflow_compat.run_tries_query``: Airflow 3.3's
    ``task_instance_history`` or 3.4's one row per try).
    """
    import psycopg

    from devstack.metadata import run_tries_query

    with psycopg.connect(metadata_dsn()) as conn:
        rows = [row for row in run_tries_query(conn, dag_id, run_id) if row["task_id"] == task_id]
    rows.sort(key=lambda row: (row["try_number"], row["map_index"]))
    return [(r["try_number"], r["state"], r["retry_delay_override"], r["retry_reason"]) for r in rows]
