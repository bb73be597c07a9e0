# The two commands a newcomer needs: `make run` and `make test`.
# Both create .venv and install the project from pyproject.toml on first use.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: run test lint check bench clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	@touch $(STAMP)

# Embedded default: SQLite, a serverless Celery broker, demo clusters; Ctrl-C stops everything.
run: $(STAMP)
	PORTAL_DEMO=1 DEBUG=1 $(PY) -m portal.embedded

# The suite waits on servers (emulators, fakes, a registry, browsers) about as much as it computes:
# on two cores, four processes took 858 s and eight 573 s (2026-12-06); worksteal lets an idle
# process take queued tests from a busy one, so the long ones do not make a tail. The schema is
# migrated once and copied per process (tests/template_db.py). TEST_WORKERS=0 runs it in one.
TEST_WORKERS ?= 8
test: $(STAMP)
	$(PY) -m pytest -n $(TEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

# ruff, mypy (check_untyped_defs on, see pyproject.toml) and the layer contracts of DESIGN.md.
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy portal gitops forges
	$(VENV)/bin/lint-imports

bench: $(STAMP)
	$(PY) bench/collect.py
	$(PY) bench/pages.py

clean:
	rm -rf var test-artifacts
