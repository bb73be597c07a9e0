"""/api/schema and /api/docs: the API's OpenAPI document, and Swagger UI over it.

The schema answers the same callers as the API itself (token or session, the viewer role).

drf-spectacular's Swagger view with drf-spectacular-sidecar's copy of Swagger UI
(SWAGGER_UI_DIST = "SIDECAR" in settings), served by the portal itself like every other
asset: the page loads no script from a CDN. The page is the portal's own template (its
navigation, its stylesheet, no inline script or style); static/portal/api-docs.js starts
Swagger UI with the SWAGGER_UI_SETTINGS the view hands over.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.authentication import SessionAuthentication
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from portal.api.auth import BearerTokenAuthentication, HasViewerRole
from portal.api.errors import api_exception_handler
from portal.api.throttles import TokenRateThrottle
from portal.kernel.accounts.roles import Role, requires_role


class SchemaView(SpectacularAPIView):
    """The OpenAPI document, for the same callers as the API itself."""

    authentication_classes = [BearerTokenAuthentication, SessionAuthentication]
    permission_classes = [HasViewerRole]
    throttle_classes = [TokenRateThrottle]

    def get_exception_handler(self) -> Any:
        return api_exception_handler

    def handle_exception(self, exc: Exception) -> Response:
        # Errors are JSON like everywhere else in the API, not a YAML "schema".
        response = super().handle_exception(exc)
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return response


class APIDocsView(SpectacularSwaggerView):
    template_name = "api/docs.html"
    url_name = "api-schema"


# A page like the others: anonymous people go to the login page, signed-in people need a role.
api_docs = requires_role(Role.VIEWER, name="portal.api.docs_views.api_docs")(APIDocsView.as_view())
