"""The CLI finds the provider's database where Airflow finds it, and says what to run on a schema that is behind.

Each test runs ``airflow-retry`` as a console script, as an operator would, on a host whose Airflow is
configured: a migrated metadata database of the session's PostgreSQL, no ``AIRFLOW_CONN_*`` variable.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import replace

import pytest

from airflow_retry_provider import migrations
from airflow_retry_provider.dlq.store import DeadLetterStore
from devstack.postgres import free_port
from tests.conftest import VENV_BIN, fresh_database, migrated_metadata_template
from tests.factories import new_letter


@pytest.fixture
def airflow_host(pg_server, tmp_path) -> Iterator[dict[str, str]]:
    """The environment of a host with its own migrated metadata database and no provider connection."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW_CONN_")}
    with fresh_database(pg_server, template=migrated_metadata_template(pg_server)) as dsn:
        name = dsn.rsplit("/", 1)[1]  # the database's name ends its DSN
        env.update(
            AIRFLOW_HOME=str(tmp_path), AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=pg_server.sqlalchemy_url(name)
        )
        yield env


@pytest.fixture
def empty_provider_dsn(pg_server) -> Iterator[str]:
    """A fresh database with none of the provider's tables."""
    with fresh_database(pg_server, template=None) as dsn:
        yield dsn


def _run(env: dict[str, str], program: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(VENV_BIN / program), *argv], env=env, capture_output=True, text=True, timeout=300
    )


def test_a_connection_added_with_airflow_connections_add_is_used(airflow_host, empty_provider_dsn):
    """``airflow connections add`` stores the connection in the metadata database; ``db upgrade`` and
    ``dlq list`` then use it, with no environment variable and no --dsn."""
    added = _run(
        airflow_host,
        "airflow",
        "connections",
        "add",
        "retry_provider_default",
        "--conn-uri",
        empty_provider_dsn,
    )
    assert added.returncode == 0, added.stderr

    upgrade = _run(airflow_host, "airflow-retry", "db", "upgrade")
    assert upgrade.returncode == 0, upgrade.stderr
    assert f"upgraded from version 0 to {migrations.latest_version()}" in upgrade.stdout
    listed = _run(airflow_host, "airflow-retry", "dlq", "list", "--json")
    assert listed.returncode == 1 and '"count": 0' in listed.stdout, listed.stderr  # 1: no letter yet


def test_a_missing_connection_names_where_it_was_looked_for(airflow_host):
    """With the connection nowhere, exit 2 and one line naming the environment variable, the metadata
    database and the commands that add it."""
    result = _run(airflow_host, "airflow-retry", "dlq", "list", "--conn-id", "retry_provider_nowhere")
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert "no database connection 'retry_provider_nowhere'" in line
    assert "AIRFLOW_CONN_RETRY_PROVIDER_NOWHERE" in line and "Airflow's metadata database" in line
    assert line.index("AIRFLOW_CONN_") < line.index("metadata database")  # Airflow's order
    assert "airflow connections add retry_provider_nowhere" in line and "--dsn" in line


@pytest.mark.parametrize(
    "argv",
    [
        ["dlq", "list"],  # reads retry_dead_letters
        ["dlq", "job", "--job", "1"],  # reads retry_replay_jobs
        ["breaker", "list"],  # reads the breakers of migration 0004
    ],
)
def test_a_database_never_upgraded_says_run_db_upgrade(airflow_host, empty_provider_dsn, argv):
    """A command on a database without the provider's tables exits 5 with one line saying to run
    ``airflow-retry db upgrade`` (not "unexpected error")."""
    result = _run(airflow_host, "airflow-retry", *argv, "--dsn", empty_provider_dsn)
    assert result.returncode == 5, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.endswith("run `airflow-retry db upgrade`") and "unexpected" not in line, line


def test_db_current_exits_5_while_behind_and_0_once_upgraded(airflow_host, empty_provider_dsn):
    """``db current`` is a check a Helm hook can run: 5 before ``db upgrade``, 0 after."""
    before = _run(airflow_host, "airflow-retry", "db", "current", "--dsn", empty_provider_dsn)
    assert before.returncode == 5 and "version 0" in before.stdout
    assert "run `airflow-retry db upgrade`" in before.stderr
    assert _run(airflow_host, "airflow-retry", "db", "upgrade", "--dsn", empty_provider_dsn).returncode == 0
    after = _run(airflow_host, "airflow-retry", "db", "current", "--dsn", empty_provider_dsn)
    assert after.returncode == 0 and after.stderr == "", after.stderr


def test_the_api_connection_added_with_airflow_connections_add_is_used(airflow_host, pg_dsn):
    """``retry_provider_airflow_api`` from the metadata database is the API a preview calls: with Airflow
    down there, the preview says the API is unavailable (exit 3), not that no API is configured."""
    uri = f"http://admin:secret-pw@127.0.0.1:{free_port()}"
    added = _run(
        airflow_host, "airflow", "connections", "add", "retry_provider_airflow_api", "--conn-uri", uri
    )
    assert added.returncode == 0, added.stderr
    letter = DeadLetterStore.from_dsn(pg_dsn).file(replace(new_letter(), task_id="load"), replay_cap=3)
    result = _run(
        airflow_host, "airflow-retry", "dlq", "preview", "--id", str(letter.letter_id), "--dsn", pg_dsn
    )
    assert result.returncode == 3, result.stderr
    assert "Airflow's API unavailable" in result.stderr and "secret-pw" not in result.stderr


def test_a_sqlalchemy_url_is_read_as_the_dsn_it_names(airflow_host, pg_dsn):
    """``--dsn postgresql+psycopg2://...`` (as in ``sql_alchemy_conn``) reaches the same database."""
    url = pg_dsn.replace("postgresql://", "postgresql+psycopg2://", 1)
    result = _run(airflow_host, "airflow-retry", "db", "current", "--dsn", url)
    assert result.returncode == 0, result.stderr
    assert f"version {migrations.latest_version()}" in result.stdout
