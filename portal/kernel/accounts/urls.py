from django.urls import path

from portal.kernel.accounts import oidc_views, views

urlpatterns = [
    path("login/", oidc_views.PortalLoginView.as_view(), name="login"),
    path("logout/", oidc_views.PortalLogoutView.as_view(), name="logout"),
    path("oidc/login/", oidc_views.oidc_login, name="oidc-login"),
    path("oidc/callback/", oidc_views.oidc_callback, name="oidc-callback"),
    path("profile/", views.profile, name="profile"),
]
