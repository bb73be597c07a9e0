"""The console's two formats (settings.PORTAL_LOG_FORMAT): `plain` for a person reading a
terminal (the embedded run), `json` for a log pipeline (the chart sets it): one JSON object per
line with time, level, logger, message, and the request id or the Celery task's id and name that
portal.requestids.ContextFilter put on the record.

Both pass what they write through the one redaction (portal.kernel.redaction): a message or an
exception that quotes a token, an Authorization header or a URL with a password loses them here,
whichever logger wrote it (ours, Django's, Celery's, a client library's).
"""

from __future__ import annotations

import logging
from datetime import date
from typing import Any

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter as _LibraryJsonFormatter

from portal.kernel.redaction import redact

# Record attributes ContextFilter may set, in the order a plain line shows them.
CONTEXT_FIELDS = ("request_id", "task_id", "task_name")


def context_of(record: logging.LogRecord) -> str:
    """" [request_id=…]" or " [task_id=… task_name=…]"; empty when neither is set."""
    pairs = [f"{name}={getattr(record, name)}" for name in CONTEXT_FIELDS if getattr(record, name, None)]
    return f" [{' '.join(pairs)}]" if pairs else ""


class PlainFormatter(logging.Formatter):
    """`time LEVEL logger [ids]: message`, traceback below, redacted."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s%(context)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        record.context = context_of(record)
        return redact(super().format(record))


class JsonFormatter(_LibraryJsonFormatter):
    """One JSON object per line: time (RFC 3339, UTC), level, logger, message, then the ids and
    any `extra=` fields, and `exc_info` with the traceback; every string redacted."""

    def __init__(self) -> None:
        super().__init__(
            ["levelname", "name", "message"],
            rename_fields={"levelname": "level", "name": "logger"},
            timestamp="time",
            reserved_attrs=[*RESERVED_ATTRS, "context"],
        )

    def process_log_record(self, log_data: dict[str, Any]) -> dict[str, Any]:
        ordered = {"time": log_data.pop("time", None), **log_data}
        return {key: _redacted(value) for key, value in ordered.items()}


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list | tuple):
        return [_redacted(item) for item in value]
    if isinstance(value, dict):
        return {key: _redacted(item) for key, item in value.items()}
    if value is None or isinstance(value, bool | int | float | date):
        return value
    # Anything else is written as its text: a request object in Django's `request` field shows
    # its path, and a calendar feed's path carries the feed's secret.
    return redact(str(value))
