"""docker-compose.yaml is Airflow's official CeleryExecutor shape with this provider (checked without a Docker engine)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
COMPOSE_TEXT = (REPO / "docker-compose.yaml").read_text()
COMPOSE = yaml.safe_load(COMPOSE_TEXT)
SERVICES = COMPOSE["services"]
CONFIGURATION = (REPO / "docs" / "CONFIGURATION.md").read_text()
PYPROJECT = (REPO / "pyproject.toml").read_text()

COMPONENTS = {
    "airflow-apiserver": "api-server",
    "airflow-scheduler": "scheduler",
    "airflow-dag-processor": "dag-processor",
    "airflow-triggerer": "triggerer",
    "airflow-worker": "celery worker",
}
AIRFLOW_SERVICES = (*COMPONENTS, "airflow-init")
SECRET_WORDS = ("PASSWORD", "SECRET", "FERNET", "TOKEN")


def _environment(service: dict) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return env


def test_compose_names_the_services_of_the_official_celery_shape():
    """Redis, PostgreSQL, an init service, Airflow's four components and the Celery worker."""
    assert set(SERVICES) == {"redis", "postgres", *AIRFLOW_SERVICES}


def test_the_executor_is_celery_on_redis_with_results_in_postgres():
    """Every Airflow service runs the CeleryExecutor with the redis service as broker."""
    for name in AIRFLOW_SERVICES:
        env = _environment(SERVICES[name])
        assert env["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor", name
        assert env["AIRFLOW__CELERY__BROKER_URL"].startswith("redis://redis:6379/"), name
        assert env["AIRFLOW__CELERY__RESULT_BACKEND"].startswith("db+postgresql://"), name


@pytest.mark.parametrize(
    ("service", "probe"),
    [
        ("postgres", "pg_isready"),
        ("redis", "redis-cli ping"),
        ("airflow-apiserver", "/api/v2/monitor/health"),
        ("airflow-scheduler", "localhost:8974/health"),  # needs ENABLE_HEALTH_CHECK
        ("airflow-dag-processor", "--job-type DagProcessorJob"),
        ("airflow-triggerer", "--job-type TriggererJob"),
        ("airflow-worker", "inspect ping"),  # the worker answers its own Celery ping
    ],
)
def test_each_long_running_service_has_a_healthcheck(service, probe):
    """Each service declares a healthcheck that probes the right thing."""
    test = SERVICES[service]["healthcheck"]["test"]
    assert probe in " ".join(test)


def test_airflow_services_wait_for_healthy_redis_and_postgres_and_for_init():
    """Components start after redis and postgres are healthy and init has completed."""
    for name in COMPONENTS:
        depends = SERVICES[name]["depends_on"]
        assert depends["redis"]["condition"] == "service_healthy", name
        assert depends["postgres"]["condition"] == "service_healthy", name
        assert depends["airflow-init"]["condition"] == "service_completed_successfully", name
    init = SERVICES["airflow-init"]["depends_on"]
    assert init["postgres"]["condition"] == "service_healthy"
    assert "airflow-init" not in init


def test_workers_wait_for_a_healthy_api_server():
    """Workers run tasks through the execution API, so they start once the api-server is healthy."""
    assert SERVICES["airflow-worker"]["depends_on"]["airflow-apiserver"]["condition"] == "service_healthy"
    env = _environment(SERVICES["airflow-worker"])
    assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == "http://airflow-apiserver:8080/execution/"


def test_the_worker_scales():
    """airflow-worker has no container_name or published port, so --scale airflow-worker=3 works."""
    worker = SERVICES["airflow-worker"]
    assert "container_name" not in worker
    assert "ports" not in worker
    assert "hostname" not in worker


def test_init_migrates_and_creates_the_provider_schema():
    """The init service migrates Airflow's database, creates our tables and the pools."""
    script = "\n".join(SERVICES["airflow-init"]["command"])
    assert "airflow db migrate" in script
    assert "airflow-retry db upgrade" in script
    assert "airflow pools set" in script


def test_components_run_their_airflow_command_with_the_provider_installed():
    """Each component runs its own command, mounts dags/ and installs this provider with its celery extra."""
    for name, command in COMPONENTS.items():
        service = SERVICES[name]
        assert service["command"] == command
        assert "./dags:/opt/airflow/dags" in service["volumes"]
        dockerfile = service["build"]["dockerfile_inline"]
        assert "apache/airflow:3.3" in dockerfile
        assert 'pip install --no-cache-dir "/opt/airflow-retry-provider[celery]"' in dockerfile


def test_ports_are_published_on_loopback_only():
    """Nothing is reachable from outside the host: every published port binds 127.0.0.1."""
    published = [(name, port) for name, svc in SERVICES.items() for port in svc.get("ports", [])]
    assert published == [("airflow-apiserver", "127.0.0.1:8080:8080")]


def test_no_secret_has_a_fixed_value():
    """Every password, secret and token comes from a variable the user must set (${VAR:?message})."""
    for name, service in SERVICES.items():
        for key, value in _environment(service).items():
            if any(word in key for word in SECRET_WORDS) and not key.endswith("_FILE"):
                assert re.fullmatch(r"\$\{[A-Z_]+:\?[^}]+\}", value), f"{name}.{key}={value!r}"
            for match in re.finditer(r"://[^:/@]+:([^@]+)@", value):
                assert match.group(1).startswith("${") and ":?" in match.group(1), f"{name}.{key}"
    assert "admin:admin@" not in COMPOSE_TEXT
    assert "change-me" not in COMPOSE_TEXT


def test_timezone_is_brasilia():
    """Default timezone America/Sao_Paulo in every Airflow service."""
    for name in AIRFLOW_SERVICES:
        env = _environment(SERVICES[name])
        assert env["AIRFLOW__CORE__DEFAULT_TIMEZONE"] == "America/Sao_Paulo"
        assert env["TZ"] == "America/Sao_Paulo"


def test_celery_is_an_optional_extra():
    """pip install airflow-retry-provider[celery] brings the Celery provider; the base install does not."""
    extras = PYPROJECT.split("[project.optional-dependencies]", 1)[1]
    celery = extras.split("celery = [", 1)[1].split("]", 1)[0]
    assert "apache-airflow-providers-celery" in celery
    base = PYPROJECT.split("dependencies = [", 1)[1].split("]", 1)[0]
    assert "celery" not in base


def test_every_environment_variable_is_documented():
    """Each variable the compose file sets or requires appears in docs/CONFIGURATION.md."""
    config = CONFIGURATION
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", config))
    used = set(re.findall(r"\$\{([A-Z_]+):\?", COMPOSE_TEXT))
    for service in SERVICES.values():
        used |= set(_environment(service))
    missing = sorted(used - documented)
    assert missing == [], f"undocumented in docs/CONFIGURATION.md: {missing}"
