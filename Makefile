# Two commands from a fresh clone: `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
ARGS ?=
STAMP := $(VENV)/.installed

.PHONY: demo screenshots test lint bench install check-postgres check-chromium clean

install: $(STAMP)

# (Re)install when pyproject.toml changes; otherwise this is a no-op.
$(STAMP): pyproject.toml
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test]'
	@touch $(STAMP)

check-postgres:
	@if [ -z "$$AIRFLOW_RETRY_PG_DSN" ] && ! command -v initdb >/dev/null 2>&1 \
	    && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
	  echo "PostgreSQL server binaries not found: apt-get install postgresql (or brew install postgresql), set AIRFLOW_RETRY_PG_DSN, or use docker compose up."; \
	  exit 1; \
	fi

demo: check-postgres $(STAMP)
	$(VENV)/bin/airflow-retry demo $(ARGS)

check-chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "Chromium not found (the browser test needs it): apt-get install chromium"; exit 1; }

# PNGs of the plugin's pages for the README, from a demo it starts (or ARGS=--base-url URL).
screenshots: check-postgres check-chromium $(STAMP)
	$(VENV)/bin/python tools/screenshots.py $(ARGS)

test: check-postgres check-chromium $(STAMP)
	$(VENV)/bin/pytest $(ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

bench: check-postgres $(STAMP)
	$(VENV)/bin/python bench/run_all.py $(ARGS)

clean:
	rm -rf .demo .demo-screenshots .pytest_cache .mypy_cache .ruff_cache
