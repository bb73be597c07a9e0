"""What ties a log line to its cause: the request id of a web request, or the id and name of the
Celery task that logged it. One context variable holds it; the middleware below sets it for a
request, portal/celery.py for a task (task_prerun / task_postrun), and `ContextFilter` copies it
onto every record the console handler writes (settings.LOGGING), plain or JSON.

A request id comes from the incoming X-Request-ID header when it is a short token of safe
characters (what a proxy or an ingress generates), so one id follows the request from the edge;
anything else (absent, long, with spaces, quotes or newlines: a log line must not be forged from
a header) is replaced by a fresh one. Either way the response carries it back in X-Request-ID.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable
from contextvars import ContextVar, Token

from django.core.signals import request_finished
from django.http import HttpRequest, HttpResponse

HEADER = "X-Request-ID"
# Letters, digits and . _ - : a UUID, a hex trace id, an ingress's id; at most 64 characters.
SAFE_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")

# {"request_id": ...} or {"task_id": ..., "task_name": ...}; empty outside both.
_context: ContextVar[dict[str, str]] = ContextVar("portal_log_context", default={})  # noqa: B039 - never mutated
_task_tokens: dict[str, Token[dict[str, str]]] = {}


def current() -> dict[str, str]:
    """The ids of the request or task running now (empty outside both)."""
    return _context.get()


def request_id_of(header: str | None) -> str:
    """The incoming header's id when it is a safe short token, else a new one."""
    if header and SAFE_ID.fullmatch(header):
        return header
    return uuid.uuid4().hex


class RequestIdMiddleware:
    """First in settings.MIDDLEWARE: every log line of the request, including Django's own
    "Not Found" and "Internal Server Error", carries its id. The id is cleared when the response
    is closed (request_finished), which comes after Django logs an error status."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = request_id_of(request.headers.get(HEADER))
        _context.set({"request_id": request_id})
        response = self.get_response(request)
        response[HEADER] = request_id
        return response


def _clear_request_id(**_: object) -> None:
    if "request_id" in _context.get():
        _context.set({})


request_finished.connect(_clear_request_id, dispatch_uid="portal.requestids.clear")


def task_started(task_id: str, task_name: str) -> None:
    """A task begins (task_prerun). An eager task runs inside its caller: the caller's ids come
    back when it ends."""
    _task_tokens[task_id] = _context.set({"task_id": task_id, "task_name": task_name})


def task_ended(task_id: str) -> None:
    """A task ends (task_postrun)."""
    token = _task_tokens.pop(task_id, None)
    if token is None:
        return
    try:
        _context.reset(token)
    except ValueError:  # set in another context (never in Celery's own tracer): just clear
        _context.set({})


class ContextFilter(logging.Filter):
    """Copies the running request's or task's ids onto the record (as `request_id`, or
    `task_id` and `task_name`), for the formatters of portal/logformat.py."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in _context.get().items():
            if not hasattr(record, name):
                setattr(record, name, value)
        return True
