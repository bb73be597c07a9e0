"""Every API error in one shape: {"error": {"code", "message", "details"}}.

Clients branch on `code` (stable, snake_case), show `message` to people, and read
`details` (always an object) for the specifics: which parameter, which choices.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from portal.api.serializers.error_serializers import ErrorSerializer
from portal.kernel.outages import RETRY_AFTER_SECONDS, outage_message, outage_of

logger = logging.getLogger(__name__)


class ApiError(exceptions.APIException):
    """An error with its own code and structured details."""

    def __init__(self, status_code: int, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(detail=message, code=code)
        self.status_code = status_code
        self.error_code = code
        self.message = message
        self.details = details or {}


def bad_request(code: str, message: str, details: dict[str, Any] | None = None) -> ApiError:
    return ApiError(status.HTTP_400_BAD_REQUEST, code, message, details)


def not_found(message: str) -> ApiError:
    return ApiError(status.HTTP_404_NOT_FOUND, "not_found", message)


def conflict(code: str, message: str, details: dict[str, Any] | None = None) -> ApiError:
    return ApiError(status.HTTP_409_CONFLICT, code, message, details)


def error_body(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return ErrorSerializer({"error": {"code": code, "message": message, "details": details or {}}}).data


def _code_message_details(exc: exceptions.APIException) -> tuple[str, str, dict[str, Any]]:
    if isinstance(exc, ApiError):
        return exc.error_code, exc.message, exc.details
    if isinstance(exc, exceptions.ValidationError):
        detail = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        fields = ", ".join(sorted(detail))
        return "invalid_parameters", f"Invalid value for: {fields}.", detail
    if isinstance(exc, exceptions.Throttled):
        return "throttled", str(exc.detail), {"retry_after": exc.wait}
    code = exc.get_codes()
    return (code if isinstance(code, str) else exc.default_code), str(exc.detail), {}


def error_message(exc: exceptions.APIException) -> str:
    """The `message` of the error body the API answers `exc` with."""
    return _code_message_details(exc)[1]


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    outage = outage_of(exc) if response is None else None
    if outage is not None:
        logger.warning("API answered 503: the %s is unreachable", outage)
        return Response(error_body("unavailable", outage_message(outage), {"service": outage}),
                        status=status.HTTP_503_SERVICE_UNAVAILABLE,
                        headers={"Retry-After": str(RETRY_AFTER_SECONDS), "Cache-Control": "no-store"})
    if response is None:
        # Logged without the request's headers, so a bearer token never reaches a log line.
        logger.error("API request failed: %s", type(exc).__name__, exc_info=exc)
        return Response(
            error_body("internal_error", "The portal failed to answer this request; it has been logged."),
            status=status.HTTP_500_INTERNAL_SERVER_ERROR,
        )
    code, message, details = _code_message_details(exc)  # type: ignore[arg-type]
    response.data = error_body(code, message, details)
    return response
