"""gunicorn's own lines (its error log: boots, worker restarts, timeouts; and the access log) in
the portal's console format, so that with PORTAL_LOG_FORMAT=json every line a web pod writes is
one JSON object; in either format through the one redaction (portal.kernel.redaction), because an
access line quotes the request's path and a calendar feed's address carries its secret there
(calendar apps cannot send a header). gunicorn.conf.py names one of these classes.

An access line is written after the response is closed, when the request's context is gone:
its request id is the one the portal answered with (X-Request-ID, portal/requestids.py).
"""

from __future__ import annotations

import logging
import traceback
from typing import Any

from gunicorn.glogging import Logger

from portal.kernel.redaction import redact
from portal.logformat import JsonFormatter


class _Redacted(logging.Formatter):
    """gunicorn's own formatter, its output redacted."""

    def __init__(self, inner: logging.Formatter) -> None:
        super().__init__()
        self.inner = inner

    def format(self, record: logging.LogRecord) -> str:
        return redact(self.inner.format(record))


class RedactingLogger(Logger):
    """gunicorn's plain lines, redacted."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        for log in (self.error_log, self.access_log):
            for handler in log.handlers:
                if getattr(handler, "_gunicorn", False):
                    handler.setFormatter(self.formatter_for(handler.formatter or logging.Formatter()))

    def formatter_for(self, given: logging.Formatter) -> logging.Formatter:
        return _Redacted(given)


class JsonLogger(RedactingLogger):
    def formatter_for(self, given: logging.Formatter) -> logging.Formatter:
        return JsonFormatter()  # redacts every string itself

    def access(self, resp: Any, req: Any, environ: dict, request_time: Any) -> None:
        if not self.access_log_enabled:
            return
        atoms = self.atoms_wrapper_class(self.atoms(resp, req, environ, request_time))
        extra = {"request_id": atoms["{x-request-id}o"]}
        try:
            self.access_log.info(self.cfg.access_log_format, atoms, extra=extra)
        except Exception:
            self.error(traceback.format_exc())


