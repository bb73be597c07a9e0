"""Who may call the API: a personal token (`Authorization: Bearer gpat_…`) or the browser's
session, and only with the viewer role or above."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from portal.kernel.accounts import tokens
from portal.kernel.accounts.roles import Role, has_role

# Never echo the token: the client knows what it sent, and responses end up in logs.
INVALID_TOKEN = "Invalid or revoked API token."


class BearerTokenAuthentication(BaseAuthentication):
    keyword = b"bearer"

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword:
            return None  # not ours: the session may still authenticate the request
        if len(parts) != 2:
            raise AuthenticationFailed("Malformed Authorization header: expected 'Bearer <token>'.")
        try:
            plain = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raise AuthenticationFailed(INVALID_TOKEN)
        token = tokens.resolve(plain)
        if token is None or not token.user.is_active:
            raise AuthenticationFailed(INVALID_TOKEN)
        tokens.touch(token)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        # Its presence makes DRF answer 401 (not 403) to a request without credentials.
        return 'Bearer realm="api"'


class HasViewerRole(BasePermission):
    message = "This needs the viewer role."

    def has_permission(self, request: Request, view: Any) -> bool:
        return has_role(request.user, Role.VIEWER)


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = BearerTokenAuthentication
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A personal API token (gpat_…) created on your profile page.",
        }
