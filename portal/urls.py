from django.contrib import admin
from django.urls import include, path

from portal import health
from portal.api.mcp.views import mcp_endpoint

urlpatterns = [
    # Probes: no login, no session, nothing but "ok" or the failed check's name (portal/health.py).
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("admin/", admin.site.urls),
    path("accounts/", include("portal.kernel.accounts.urls")),
    path("api/", include("portal.api.urls")),
    path("mcp", mcp_endpoint, name="mcp"),
    path("notifications/", include("portal.notifications.urls")),
    path("", include("portal.web.urls")),
]
