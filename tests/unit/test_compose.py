"""docker-compose.yaml is a valid Airflow 3.3 stack for users (checked without a Docker engine)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((REPO / "docker-compose.yaml").read_text())
README = (REPO / "README.md").read_text()


def _environment(service: dict) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return env


def test_compose_names_the_services():
    """The stack has PostgreSQL, an init service and Airflow's four components."""
    assert set(COMPOSE["services"]) == {
        "postgres",
        "airflow-init",
        "api-server",
        "scheduler",
        "dag-processor",
        "triggerer",
    }


def test_postgres_has_a_pg_isready_healthcheck():
    """Airflow services wait for a healthy PostgreSQL."""
    test = COMPOSE["services"]["postgres"]["healthcheck"]["test"]
    assert "pg_isready" in " ".join(test)
    for name in ("api-server", "scheduler", "dag-processor", "triggerer"):
        depends = COMPOSE["services"][name]["depends_on"]
        assert depends["postgres"]["condition"] == "service_healthy"
        assert depends["airflow-init"]["condition"] == "service_completed_successfully"


def test_init_migrates_and_creates_the_provider_schema():
    """The init service migrates Airflow's database, creates our tables and the pools."""
    script = "\n".join(COMPOSE["services"]["airflow-init"]["command"])
    assert "airflow db migrate" in script
    assert "airflow-retry db init" in script
    assert "airflow pools set" in script


def test_components_run_their_airflow_command_with_the_repository_installed():
    """Each component runs its own command, mounts dags/ and installs this provider from the repository."""
    for name in ("api-server", "scheduler", "dag-processor", "triggerer"):
        service = COMPOSE["services"][name]
        assert service["command"] == name
        assert "./dags:/opt/airflow/dags" in service["volumes"]
        assert "pip install" in service["build"]["dockerfile_inline"]
        assert "apache/airflow:3.3" in service["build"]["dockerfile_inline"]


def test_timezone_is_brasilia():
    """Default timezone America/Sao_Paulo in every Airflow service."""
    for name in ("api-server", "scheduler", "dag-processor", "triggerer", "airflow-init"):
        env = _environment(COMPOSE["services"][name])
        assert env["AIRFLOW__CORE__DEFAULT_TIMEZONE"] == "America/Sao_Paulo"
        assert env["TZ"] == "America/Sao_Paulo"


def test_every_environment_variable_is_documented_in_the_readme():
    """Each variable the compose file sets appears in the README's configuration section."""
    config = README.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", config))
    used = set()
    for service in COMPOSE["services"].values():
        used |= set(_environment(service))
    missing = sorted(used - documented)
    assert missing == [], f"undocumented in README Configuration: {missing}"
