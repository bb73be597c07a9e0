"""Log lines (portal/requestids.py, portal/logformat.py): plain or JSON by PORTAL_LOG_FORMAT, each
with the request id or the Celery task's id and name, never a secret.

The settings' own LOGGING is exercised in a subprocess (as a pod starts it); the request and task
ids through Django's test client and a task run by Celery's own tracer, with the console formats
on a handler of the test's."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import Client, override_settings
from django.urls import clear_url_caches, path, set_urlconf

from portal import requestids
from portal.celery import app as celery_app
from portal.logformat import JsonFormatter, PlainFormatter
from portal.requestids import ContextFilter

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "ghp_0123456789abcdefSECRETtoken"  # noqa: S105 - the secret that must not be logged
log = logging.getLogger("tests.logs")


def _logging_view(request):
    from django.http import HttpResponse

    log.info("serving %s", request.path)
    return HttpResponse("ok")


def _failing_view(request):
    raise RuntimeError(f"forge said: Authorization: Bearer {TOKEN}")


urlpatterns = [path("logs", _logging_view), path("fails", _failing_view)]


@celery_app.task(name="tests.log_from_a_task")
def log_from_a_task() -> None:
    log.info("inside the task")


class Console:
    def __init__(self, formatter: logging.Formatter) -> None:
        self.stream = io.StringIO()
        self.handler = logging.StreamHandler(self.stream)
        self.handler.setFormatter(formatter)
        self.handler.addFilter(ContextFilter())

    def lines(self) -> list[str]:
        return self.stream.getvalue().splitlines()

    def records(self) -> list[dict]:
        return [json.loads(line) for line in self.lines() if line.startswith("{")]


@contextlib.contextmanager
def captured(formatter: logging.Formatter) -> Iterator[Console]:
    console = Console(formatter)
    root = logging.getLogger()
    level = root.level
    root.addHandler(console.handler)
    root.setLevel(logging.INFO)
    try:
        yield console
    finally:
        root.removeHandler(console.handler)
        root.setLevel(level)


@pytest.fixture(autouse=True)
def _this_threads_urlconf_put_back() -> Iterator[None]:
    """A request sets its thread's URL conf (this module's, under override_settings) and only a
    finished response puts it back; a test whose view raises leaves it set, and later tests in
    this worker would resolve and reverse against this module's three URLs. Its ROOT_URLCONF too:
    after this module, a later test in the same worker found ROOT_URLCONF still naming it
    (test_roles' guarded URLs came out empty), so the setting is put back here as well."""
    from django.conf import settings

    root = settings.ROOT_URLCONF
    yield
    set_urlconf(None)
    if settings.ROOT_URLCONF != root:
        settings.ROOT_URLCONF = root
        clear_url_caches()


@pytest.fixture(params=["json", "plain"])
def console(request: pytest.FixtureRequest) -> Iterator[Console]:
    with captured(JsonFormatter() if request.param == "json" else PlainFormatter()) as console:
        yield console


@pytest.fixture
def json_console() -> Iterator[Console]:
    with captured(JsonFormatter()) as console:
        yield console


@pytest.fixture
def plain_console() -> Iterator[Console]:
    with captured(PlainFormatter()) as console:
        yield console


@override_settings(ROOT_URLCONF=__name__)
def test_an_incoming_safe_request_id_is_kept_logged_and_echoed(json_console):
    response = Client().get("/logs", headers={"X-Request-ID": "edge-7f3a.42_b"})
    assert response["X-Request-ID"] == "edge-7f3a.42_b"
    (line,) = [r for r in json_console.records() if r["logger"] == "tests.logs"]
    assert line["request_id"] == "edge-7f3a.42_b"
    assert line["message"] == "serving /logs"
    assert line["level"] == "INFO"
    assert line["time"].endswith("+00:00")
    assert list(line)[:4] == ["time", "level", "logger", "message"]
    assert requestids.current() == {}  # cleared when the response closed


@pytest.mark.parametrize("header", [None, "", "has space", "x" * 65, 'quote"d', "line\nbreak", "ünï"])
@override_settings(ROOT_URLCONF=__name__)
def test_a_missing_or_unsafe_request_id_is_replaced_by_a_new_one(json_console, header):
    headers = {} if header is None else {"X-Request-ID": header}
    response = Client().get("/logs", headers=headers)
    new = response["X-Request-ID"]
    assert new != header and requestids.SAFE_ID.fullmatch(new)
    (line,) = [r for r in json_console.records() if r["logger"] == "tests.logs"]
    assert line["request_id"] == new


@override_settings(ROOT_URLCONF=__name__)
def test_each_request_gets_its_own_id_and_djangos_own_lines_carry_it(json_console):
    first = Client().get("/logs")["X-Request-ID"]
    not_found = Client().get("/no-such-page")
    assert not_found.status_code == 404
    second = not_found["X-Request-ID"]
    assert first != second
    (warning,) = [r for r in json_console.records() if r["logger"] == "django.request"]
    assert warning["request_id"] == second and warning["level"] == "WARNING"


@override_settings(ROOT_URLCONF=__name__)
def test_a_token_in_an_exception_never_reaches_a_log_line(console, settings):
    settings.PORTAL_GITOPS_TOKEN = "tok-settings-0123456789"  # noqa: S105 - a known secret of settings
    client = Client(raise_request_exception=False)
    response = client.get("/fails")
    assert response.status_code == 500
    try:
        raise ValueError(f"clone https://bot:{TOKEN}@git.example/r.git failed; tok-settings-0123456789")
    except ValueError:
        log.exception("pin read failed for %s", f"Bearer {TOKEN}")
    text = console.stream.getvalue()
    assert "Internal Server Error: /fails" in text and "pin read failed" in text
    assert "RuntimeError" in text and "ValueError" in text  # the tracebacks are there, redacted
    assert TOKEN not in text and "tok-settings-0123456789" not in text
    assert "***" in text


def test_a_tasks_lines_carry_its_id_and_name(console):
    result = log_from_a_task.apply(task_id="task-1234")
    assert result.successful()
    (line,) = [ln for ln in console.lines() if "inside the task" in ln]
    if line.startswith("{"):
        record = json.loads(line)
        assert (record["task_id"], record["task_name"]) == ("task-1234", "tests.log_from_a_task")
        assert "request_id" not in record
    else:
        assert "[task_id=task-1234 task_name=tests.log_from_a_task]: inside the task" in line
    assert requestids.current() == {}


@override_settings(ROOT_URLCONF=__name__)
def test_plain_lines_carry_the_request_id_too(plain_console):
    request_id = Client().get("/logs", headers={"X-Request-ID": "abc123"})["X-Request-ID"]
    (line,) = [ln for ln in plain_console.lines() if "serving /logs" in ln]
    assert f" INFO tests.logs [request_id={request_id}]: serving /logs" in line


def test_an_eager_task_inside_a_request_gives_the_request_its_id_back():
    requestids._context.set({"request_id": "outer"})
    try:
        log_from_a_task.apply(task_id="inner-task")
        assert requestids.current() == {"request_id": "outer"}
    finally:
        requestids._context.set({})


SCRIPT = """
import logging
log = logging.getLogger("portal.check")
log.warning("starting")
try:
    raise OSError("registry answered 401 for Authorization: Bearer %s" % TOKEN)
except OSError:
    log.exception("read failed")
"""


@pytest.mark.parametrize("fmt", ["json", "plain"])
def test_the_settings_console_writes_the_chosen_format_without_secrets(tmp_path, fmt):
    env = {**os.environ, "PORTAL_LOG_FORMAT": fmt, "PORTAL_VAR_DIR": str(tmp_path),
           "PORTAL_GITOPS_TOKEN": TOKEN, "DJANGO_SETTINGS_MODULE": "portal.settings"}
    script = f"TOKEN = {TOKEN!r}\n{SCRIPT}"
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", script], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert TOKEN not in done.stderr and "read failed" in done.stderr
    if fmt == "json":
        records = [json.loads(line) for line in done.stderr.splitlines()]
        assert [(r["level"], r["logger"], r["message"]) for r in records] == [
            ("WARNING", "portal.check", "starting"), ("ERROR", "portal.check", "read failed")]
        assert "OSError: registry answered 401 for Authorization: ***" in records[1]["exc_info"]
    else:
        assert " WARNING portal.check: starting" in done.stderr.splitlines()[0]


def test_an_unknown_log_format_refuses_to_start(tmp_path):
    env = {**os.environ, "PORTAL_LOG_FORMAT": "xml", "PORTAL_VAR_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "PORTAL_LOG_FORMAT must be plain or json" in done.stderr


FEED_PATH = "/calendar/feeds/gcal_Zq8vKx3mWp0RtY7uLs2N/environments/prod.ics"


@pytest.mark.parametrize("fmt", ["json", "plain"])
def test_the_development_servers_access_lines_are_redacted(tmp_path, fmt):
    """`make run` serves through Django's development server, whose access lines (the logger
    django.server, with a handler of Django's own by default) quote the path, and a calendar
    feed's path carries its secret."""
    env = {**os.environ, "PORTAL_LOG_FORMAT": fmt, "PORTAL_VAR_DIR": str(tmp_path),
           "DJANGO_SETTINGS_MODULE": "portal.settings"}
    # What django.core.servers.basehttp.WSGIRequestHandler.log_message writes for a request.
    script = ("import logging\n"
              f"logging.getLogger('django.server').info('\"%s\" %s %s', 'GET {FEED_PATH} HTTP/1.1', '200', '1583')\n")
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", script], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "/calendar/feeds/gcal_" in done.stderr
    assert "Zq8vKx3mWp0RtY7uLs2N" not in done.stderr
