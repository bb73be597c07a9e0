"""/api/docs: Swagger UI over the portal's own OpenAPI schema (/api/schema).

drf-spectacular's Swagger view with drf-spectacular-sidecar's copy of Swagger UI
(SWAGGER_UI_DIST = "SIDECAR" in settings), served by the portal itself like every other
asset: the page loads no script from a CDN. The page is the portal's own template (its
navigation, its stylesheet, no inline script or style); static/portal/api-docs.js starts
Swagger UI with the SWAGGER_UI_SETTINGS the view hands over.
"""

from __future__ import annotations

from drf_spectacular.views import SpectacularSwaggerView

from portal.kernel.accounts.roles import Role, requires_role


class APIDocsView(SpectacularSwaggerView):
    template_name = "api/docs.html"
    url_name = "api-schema"


# A page like the others: anonymous people go to the login page, signed-in people need a role.
api_docs = requires_role(Role.VIEWER, name="portal.api.docs.api_docs")(APIDocsView.as_view())
