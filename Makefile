# Two commands from a fresh clone: `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
ARGS ?=
STAMP := $(VENV)/.installed
# .venv is the Airflow 3.3 lane (the newest 3.3); `make test-34` has its own virtualenv.
AIRFLOW_33 := apache-airflow>=3.3.1,<3.4

.PHONY: demo screenshots test test-34 lint bench install install-34 check-postgres check-chromium check-redis clean

install: $(STAMP)

# (Re)install when pyproject.toml changes; otherwise this is a no-op.
$(STAMP): pyproject.toml
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test]' '$(AIRFLOW_33)'
	@touch $(STAMP)

# What demo and test need (PostgreSQL; Chromium and Redis for the suite): installed when missing
# where apt-get can (as root), else one line naming the command to run. .ci/run uses the same script.
check-postgres:
	@bash tools/bootstrap.sh postgres

check-chromium:
	@bash tools/bootstrap.sh chromium

check-redis:
	@bash tools/bootstrap.sh redis

demo: check-postgres $(STAMP)
	$(VENV)/bin/airflow-retry demo $(ARGS)

# PNGs of the plugin's pages for the README, from a demo it starts (or ARGS=--base-url URL).
screenshots: check-postgres check-chromium $(STAMP)
	$(VENV)/bin/python tools/screenshots.py $(ARGS)

# In two processes (pytest-xdist, tests/parallel.py): one runs the e2e layer, one Airflow stack at a
# time, while the other runs the cheaper layers. TEST_WORKERS=0 runs everything in one process.
TEST_WORKERS ?= 2
test: check-postgres check-chromium check-redis $(STAMP)
	$(VENV)/bin/pytest -n $(TEST_WORKERS) --dist loadscope $(ARGS)

# The Airflow 3.4 lane (CI runs it after `make test`): this checkout in its own virtualenv beside the
# newest 3.4 the registry serves (tools/venv34.sh: a pre-release until the final one), running what
# differs between 3.3 and 3.4 (CONTRIBUTING.md, "Two Airflow versions", says which and why).
VENV34 ?= .venv34
STAMP34 := $(VENV34)/.installed
ARGS34 ?= tests/unit tests/integration tests/dags/test_composed_policies.py tests/dags/test_policy_dags.py \
	tests/dags/test_breaker_dags.py tests/dags/test_executor_failure.py tests/dags/test_clear_race.py tests/dags/test_lineage_facets.py \
	tests/e2e/test_retries_browser.py tests/e2e/test_dlq_replay.py tests/e2e/test_breaker.py \
	tests/e2e/test_ui_browser.py tests/e2e/test_install.py tests/e2e/test_provider_discovery.py \
	tests/e2e/test_pools.py tests/e2e/test_lineage.py \
	tests/e2e/test_storm.py::test_a_storm_of_200_failures_is_one_story_computed_once_per_run
install-34: $(STAMP34)

$(STAMP34): pyproject.toml tools/venv34.sh
	bash tools/venv34.sh $(VENV34)
	@touch $(STAMP34)

test-34: check-postgres check-chromium $(STAMP34)
	$(VENV34)/bin/pytest -n $(TEST_WORKERS) --dist loadscope $(ARGS34)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

bench: check-postgres $(STAMP)
	$(VENV)/bin/python bench/run_all.py $(ARGS)

clean:
	rm -rf .demo .demo-screenshots .pytest_cache .mypy_cache .ruff_cache
