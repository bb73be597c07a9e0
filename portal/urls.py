from django.contrib import admin
from django.urls import include, path

from portal import probes, scrape
from portal.api.mcp.views import mcp_endpoint

urlpatterns = [
    # Probes: no login, no session, nothing but "ok" or the failed check's name (portal/probes.py).
    path("healthz", probes.healthz, name="healthz"),
    path("readyz", probes.readyz, name="readyz"),
    # Prometheus: no login; off or behind a Bearer token by setting (portal/scrape.py).
    path("metrics", scrape.metrics, name="metrics"),
    path("admin/", admin.site.urls),
    path("accounts/", include("portal.kernel.accounts.urls")),
    path("api/", include("portal.api.urls")),
    path("mcp", mcp_endpoint, name="mcp"),
    path("notifications/", include("portal.notifications.urls")),
    path("", include("portal.web.urls")),
]

# A database or broker outage answers 503 saying so, any other failure Django's 500 page.
handler500 = "portal.web.views.outage.server_error"
