"""Loaded with `-p tests.warm_bytecode` (pyproject addopts): under pytest-xdist, the controller
collects the run's tests once in a subprocess before the workers start, so that the bytecode
of every test module (assertion-rewritten) and of the portal's own modules is cached on disk
when eight workers import them. Cold, each worker spent 19 s of CPU collecting, 11 s of it
rewriting and compiling what every other worker compiled too (2026-12-07, two cores); warm, 8 s.

The subprocess runs while the controller migrates the template database (tests/template_db.py),
on the core that migration leaves idle, and the workers start once both are done. Nothing is
cached when PYTHONDONTWRITEBYTECODE is set (the Makefile's `test` unsets it), and nothing
happens without xdist.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

_KEY = pytest.StashKey[subprocess.Popen]()


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER") or not getattr(config.option, "numprocesses", None):
        return
    if sys.dont_write_bytecode or config.option.collectonly:
        return
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist", "-p", "no:randomly",
               *config.args]
    # From where pytest was started: its arguments are paths relative to there.
    config.stash[_KEY] = subprocess.Popen(command, cwd=config.invocation_params.dir, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Before xdist starts its workers (its own sessionstart). A failed collection is not this
    plugin's to report: the workers collect again and say why."""
    warming = session.config.stash.get(_KEY, None)
    if warming is not None:
        warming.wait()
