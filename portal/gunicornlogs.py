"""gunicorn's own lines (its error log: boots, worker restarts, timeouts; and the access log) in
the portal's console format, so that with PORTAL_LOG_FORMAT=json every line a web pod writes is
one JSON object. gunicorn.conf.py names this class when settings say json.

An access line is written after the response is closed, when the request's context is gone:
its request id is the one the portal answered with (X-Request-ID, portal/requestids.py).
"""

from __future__ import annotations

import traceback
from typing import Any

from gunicorn.glogging import Logger

from portal.logformat import JsonFormatter


class JsonLogger(Logger):
    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        for log in (self.error_log, self.access_log):
            for handler in log.handlers:
                if getattr(handler, "_gunicorn", False):
                    handler.setFormatter(JsonFormatter())

    def access(self, resp: Any, req: Any, environ: dict, request_time: Any) -> None:
        if not self.access_log_enabled:
            return
        atoms = self.atoms_wrapper_class(self.atoms(resp, req, environ, request_time))
        extra = {"request_id": atoms["{x-request-id}o"]}
        try:
            self.access_log.info(self.cfg.access_log_format, atoms, extra=extra)
        except Exception:
            self.error(traceback.format_exc())


