"""Page latency for /metrics: every answer timed and counted under its view's URL name.

The label is the resolved URL pattern's name (`app_detail`, `api:gitops-list`), never the path:
a path carries app and cluster names without bound. An unresolved request (a 404 before any
view) is counted as "unresolved"; probes and the scrape itself are left out.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from portal.kernel.metrics import PAGE_SECONDS

UNTIMED = frozenset({"healthz", "readyz", "metrics"})


def view_label(request: HttpRequest) -> str:
    match = getattr(request, "resolver_match", None)
    if match is None:
        return "unresolved"
    return match.view_name or "unnamed"


class PageLatencyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        view = view_label(request)
        if view not in UNTIMED:
            PAGE_SECONDS.labels(view=view).observe(time.perf_counter() - started)
        return response
