"""The sign-in pages: the login form (local users, when allowed), the round trip through the
identity provider, and sign-out that ends the provider's session too.

Every failure of the round trip (the provider refused, the state does not match, the provider
cannot be reached, the ID token does not verify) ends on the login page with a sentence saying
so, never a 500: a person who cannot sign in needs to know whom to ask. No message carries the
client secret or a token.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlencode

import requests
from authlib.common.errors import AuthlibBaseError
from authlib.integrations.base_client import OAuthError
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render, resolve_url
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from joserfc.errors import JoseError

from portal.kernel.accounts import localpasswords, oidc

logger = logging.getLogger(__name__)

NEXT_KEY = "portal_oidc_next"
ID_TOKEN_KEY = "portal_oidc_id_token"
# What the round trip can raise besides the provider's own answer: the network, a document that
# is not JSON, an ID token that does not verify (Authlib checks it with joserfc).
UNREACHABLE = (requests.RequestException, ValueError)
UNVERIFIED = (AuthlibBaseError, JoseError)


class PortalLoginView(auth_views.LoginView):
    """Django's login form, beside the provider's button; with PORTAL_LOCAL_LOGIN off the form is
    not shown and a password sent anyway is refused (break-glass switched off in production)."""

    template_name = "accounts/login.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context.update(
            local_login=settings.PORTAL_LOCAL_LOGIN, oidc_enabled=oidc.enabled(), oidc_name=oidc.provider_name()
        )
        return context

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not settings.PORTAL_LOCAL_LOGIN:
            messages.error(request, f"Signing in with a password is switched off here: use {oidc.provider_name()}.")
            return render(request, self.template_name, self.get_context_data(), status=403)
        return super().post(request, *args, **kwargs)


class PortalLogoutView(auth_views.LogoutView):
    """Django's sign-out (POST only), then, for a session that came from the provider, the
    provider's end_session_endpoint with the ID token as hint, which sends the browser back to
    the login page: otherwise the next "Sign in with…" would pass straight through."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        id_token = request.session.get(ID_TOKEN_KEY)
        response = super().post(request, *args, **kwargs)
        if not id_token or not oidc.enabled():
            return response
        try:
            endpoint = oidc.client().load_server_metadata().get("end_session_endpoint")
        except UNREACHABLE:
            logger.warning("OIDC sign-out: the provider's discovery document could not be read")
            endpoint = None
        if not endpoint:
            return response
        params = {
            "id_token_hint": id_token,
            "client_id": settings.PORTAL_OIDC_CLIENT_ID,
            "post_logout_redirect_uri": request.build_absolute_uri(resolve_url(settings.LOGIN_URL)),
        }
        separator = "&" if "?" in endpoint else "?"
        return HttpResponseRedirect(f"{endpoint}{separator}{urlencode(params)}")


def oidc_login(request: HttpRequest) -> HttpResponse:
    """Off to the provider, with PKCE, state and nonce kept in the session by Authlib."""
    if not oidc.enabled():
        raise Http404("Sign-in through an identity provider is not configured.")
    next_url = request.GET.get("next", "")
    request.session[NEXT_KEY] = next_url if _safe(request, next_url) else ""
    callback = request.build_absolute_uri(reverse("oidc-callback"))
    try:
        return oidc.client().authorize_redirect(request, callback)
    except UNREACHABLE:
        logger.warning("OIDC sign-in: the provider's discovery document could not be read")
        return _back_to_login(
            request,
            f"{oidc.provider_name()} could not be reached. Try again in a "
            "minute; if it stays unreachable, tell your platform team.",
        )


def oidc_callback(request: HttpRequest) -> HttpResponse:
    if not oidc.enabled():
        raise Http404("Sign-in through an identity provider is not configured.")
    error = request.GET.get("error")
    if error:
        # The provider's own words, bounded; the template escapes them.
        return _back_to_login(request, f"{oidc.provider_name()} did not sign you in ({error[:80]}).")
    try:
        token = oidc.client().authorize_access_token(request)
        claims = dict(token.get("userinfo") or {})
        if not claims:
            raise OAuthError(description="no ID token in the provider's answer")
        groups = oidc.groups_of(claims)
        if groups is None:  # not in the ID token: the userinfo endpoint has it, or nobody does
            groups = oidc.groups_of(dict(oidc.client().userinfo(token=token))) or []
    except UNVERIFIED as exc:
        logger.warning("OIDC sign-in refused: %s", type(exc).__name__)
        return _back_to_login(
            request,
            f"The answer from {oidc.provider_name()} could not be verified (an expired "
            "or repeated sign-in link?). Please sign in again.",
        )
    except UNREACHABLE as exc:
        logger.warning("OIDC sign-in failed: %s", type(exc).__name__)
        return _back_to_login(
            request, f"{oidc.provider_name()} could not be reached to finish signing in. Try again in a minute."
        )
    outcome = oidc.sign_in(claims, groups)
    if outcome.role is None:
        return render(
            request,
            "accounts/oidc_no_role.html",
            {
                "account": oidc.display_name(claims),
                "provider": oidc.provider_name(),
                "groups": groups,
                "configured": [g for names in oidc.configured_groups().values() for g in names],
            },
            status=403,
        )
    if not outcome.user.is_active:  # switched off in the portal by an admin: the provider cannot undo that
        return _back_to_login(request, "This account is deactivated in the portal. Ask your platform team.")
    next_url = request.session.pop(NEXT_KEY, "")
    login(request, outcome.user, backend=localpasswords.BACKEND)
    request.session[ID_TOKEN_KEY] = token["id_token"]  # after login(), which renews the session
    return redirect(next_url if _safe(request, next_url) else settings.LOGIN_REDIRECT_URL)


def _safe(request: HttpRequest, url: str) -> bool:
    return bool(url) and url_has_allowed_host_and_scheme(
        url, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )


def _back_to_login(request: HttpRequest, message: str) -> HttpResponse:
    messages.error(request, message)
    return redirect(settings.LOGIN_URL)
