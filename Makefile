# Two commands from a fresh clone: `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
ARGS ?=
STAMP := $(VENV)/.installed

.PHONY: demo screenshots test lint bench install check-postgres check-chromium check-redis clean

install: $(STAMP)

# (Re)install when pyproject.toml changes; otherwise this is a no-op.
$(STAMP): pyproject.toml
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test]'
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

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

bench: check-postgres $(STAMP)
	$(VENV)/bin/python bench/run_all.py $(ARGS)

clean:
	rm -rf .demo .demo-screenshots .pytest_cache .mypy_cache .ruff_cache
