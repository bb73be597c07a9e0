"""The portal's answer to an unhandled failure (Django's `handler500`): a 503 that says which
service is down when the database or the broker cannot be reached (portal.kernel.outages), else
Django's own 500 page.

Every layer of middleware and every view is covered: Django turns an exception raised anywhere
below into a call of this handler, with the exception still being handled. The outage page is
rendered without the request's context processors, which would ask the unreachable database who
the user is, and it reloads itself after `Retry-After` seconds.
"""

from __future__ import annotations

import logging
import sys

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import loader
from django.views import defaults

from portal.kernel.outages import RETRY_AFTER_SECONDS, outage_message, outage_of

log = logging.getLogger(__name__)

API_PREFIXES = ("/api/", "/mcp")


def server_error(request: HttpRequest) -> HttpResponse:
    which = outage_of(sys.exc_info()[1])
    if which is None:
        return defaults.server_error(request)
    log.warning("answered 503: the %s is unreachable (%s %s)", which, request.method, request.path)
    message = outage_message(which)
    response: HttpResponse
    if request.path.startswith(API_PREFIXES):
        # The API's error shape (portal/api/errors.py), for a failure before the API's own handler.
        body = {"error": {"code": "unavailable", "message": message, "details": {"service": which}}}
        response = JsonResponse(body, status=503)
    else:
        page = loader.get_template("web/unavailable.html")
        response = HttpResponse(page.render({"message": message, "retry_after": RETRY_AFTER_SECONDS}), status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    return response
