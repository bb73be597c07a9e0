from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("portal.accounts.urls")),
    path("api/", include("portal.api.urls")),
    path("notifications/", include("portal.notifications.urls")),
    path("", include("portal.web.urls")),
]
