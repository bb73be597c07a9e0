from django.contrib import admin
from django.urls import include, path

from portal.api.mcp.views import mcp_endpoint

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("portal.kernel.accounts.urls")),
    path("api/", include("portal.api.urls")),
    path("mcp", mcp_endpoint, name="mcp"),
    path("notifications/", include("portal.notifications.urls")),
    path("", include("portal.web.urls")),
]
