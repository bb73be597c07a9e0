# The two commands a newcomer needs: `make run` and `make test`.
# Both create .venv and install the project from pyproject.toml on first use.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: run test lint check bench clean

# uv installs the same resolution as pip from pyproject.toml in a quarter of the time (33 s
# against 130 s for the test extras on this machine, 2026-12-06): CI creates the venv every run.
# It is bootstrapped by the venv's own pip, so a fresh machine needs nothing but Python.
$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check 'uv>=0.5,<1'
	$(VENV)/bin/uv pip install --python $(PY) --quiet --compile-bytecode -e '.[test]'
	@touch $(STAMP)

# Embedded default: SQLite, a serverless Celery broker, demo clusters; Ctrl-C stops everything.
run: $(STAMP)
	PORTAL_DEMO=1 DEBUG=1 $(PY) -m portal.embedded

# The suite waits on servers (emulators, fakes, a registry, browsers) about as much as it computes:
# on two cores, four processes took 858 s and eight 573 s (2026-12-06); worksteal lets an idle
# process take queued tests from a busy one, so the long ones do not make a tail. The schema is
# migrated once and copied per process (tests/template_db.py). TEST_WORKERS=0 runs it in one.
# Bytecode is cached for the suite even where the environment says not to (this machine sets
# PYTHONDONTWRITEBYTECODE): every worker and every server a test starts imports the same
# modules, and tests/warm_bytecode.py compiles them once before the workers start.
TEST_WORKERS ?= 8
test: export PYTHONDONTWRITEBYTECODE :=
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
