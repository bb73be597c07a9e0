"""Sign-in through the company's identity provider (OpenID Connect): the client, and claims → user.

The protocol is Authlib's (`authlib.integrations.django_client`), not ours: it reads the provider's
discovery document (`<issuer>/.well-known/openid-configuration`), sends PKCE (S256) and a nonce,
and checks the ID token's signature against the provider's JWKS and its claims (issuer, audience,
expiry, nonce, at_hash); discovery also names the `end_session_endpoint` sign-out goes to.
mozilla-django-oidc was the other candidate: it has no discovery, so every endpoint and the signing
key would be configured by hand, per provider.

What this module adds is the portal's side: a person is found by (issuer, sub), never by e-mail
alone; their e-mail and name are refreshed at each sign-in; and the provider's groups pick their
portal role at each sign-in (admin > member > viewer), so removing someone from a group at the
provider takes the role away at their next sign-in.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from authlib.integrations.django_client import OAuth
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone

from portal.kernel.accounts import teams
from portal.kernel.accounts.models import OidcIdentity
from portal.kernel.accounts.roles import Role, grant

# A groups claim is the provider's data: bounded before it is stored, compared or shown.
MAX_GROUPS = 500
MAX_GROUP_LENGTH = 200
USERNAME_LENGTH = 150  # Django's User.username

_clients: dict[tuple, Any] = {}
_clients_lock = threading.Lock()


def enabled() -> bool:
    return bool(settings.PORTAL_OIDC_ISSUER)


def provider_name() -> str:
    return settings.PORTAL_OIDC_NAME


def client() -> Any:
    """The Authlib client for the configured provider; one per configuration, so the discovery
    document and the JWKS are fetched once per process rather than at every sign-in (a failed
    fetch is not kept: the next sign-in tries again)."""
    key = (
        settings.PORTAL_OIDC_ISSUER,
        settings.PORTAL_OIDC_CLIENT_ID,
        settings.PORTAL_OIDC_CLIENT_SECRET,
        settings.PORTAL_OIDC_SCOPES,
        settings.PORTAL_OIDC_TIMEOUT,
    )
    with _clients_lock:
        if key not in _clients:
            oauth = OAuth()
            _clients[key] = oauth.register(
                "portal_oidc",
                client_id=settings.PORTAL_OIDC_CLIENT_ID,
                client_secret=settings.PORTAL_OIDC_CLIENT_SECRET or None,
                server_metadata_url=f"{settings.PORTAL_OIDC_ISSUER}/.well-known/openid-configuration",
                client_kwargs={
                    "scope": settings.PORTAL_OIDC_SCOPES,
                    "code_challenge_method": "S256",
                    "default_timeout": settings.PORTAL_OIDC_TIMEOUT,
                },
            )
        return _clients[key]


def configured_groups() -> dict[Role, list[str]]:
    return {
        Role.ADMIN: list(settings.PORTAL_OIDC_ADMIN_GROUPS),
        Role.MEMBER: list(settings.PORTAL_OIDC_MEMBER_GROUPS),
        Role.VIEWER: list(settings.PORTAL_OIDC_VIEWER_GROUPS),
    }


def groups_of(claims: Mapping[str, Any]) -> list[str] | None:
    """The groups claim as a list of names, or None when the claims do not carry it (then the
    userinfo endpoint is asked). Providers send a list, a few a single string."""
    value = claims.get(settings.PORTAL_OIDC_GROUPS_CLAIM)
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return []
    return [str(g)[:MAX_GROUP_LENGTH] for g in value[:MAX_GROUPS] if isinstance(g, str | int) and str(g)]


def role_for(groups: Iterable[str]) -> Role | None:
    """The highest role any of these groups maps to; None when none is mapped."""
    held = set(groups)
    for role, names in configured_groups().items():  # admin, member, viewer: highest first
        if held & set(names):
            return role
    return None


@dataclass(frozen=True)
class SignIn:
    """What one sign-in found: the user (made or refreshed) and the role their groups give."""

    user: Any
    role: Role | None
    groups: list[str]


def sign_in(claims: Mapping[str, Any], groups: list[str]) -> SignIn:
    """The user the ID token names, with e-mail, name and role refreshed from these claims.
    A user in no mapped group keeps no portal role: a session of theirs elsewhere loses access."""
    issuer, subject = str(claims["iss"]), str(claims["sub"])
    role = role_for(groups)
    with transaction.atomic():
        identity = (
            OidcIdentity.objects.select_related("user")
            .select_for_update()
            .filter(issuer=issuer, subject=subject)
            .first()
        )
        if identity is None:
            user = get_user_model().objects.create_user(_free_username(claims))
            user.set_unusable_password()  # the provider is the only way in for this account
            identity = OidcIdentity.objects.create(user=user, issuer=issuer, subject=subject)
        user = identity.user
        _refresh_profile(user, claims)
        identity.last_sign_in_at = timezone.now()
        identity.save(update_fields=["last_sign_in_at"])
        if role is None:
            user.groups.remove(*Group.objects.filter(name__in=[r.group_name for r in Role]))
        else:
            grant(user, role)
            teams.sync_teams(user, groups)  # teams from the same groups, refreshed at each sign-in
    return SignIn(user=user, role=role, groups=groups)


def _refresh_profile(user: Any, claims: Mapping[str, Any]) -> None:
    user.email = _text(claims.get("email"), 254)
    user.first_name = _text(claims.get("given_name"), 150)
    user.last_name = _text(claims.get("family_name"), 150)
    if not user.first_name and not user.last_name:
        user.first_name = _text(claims.get("name"), 150)
    user.save()


def _free_username(claims: Mapping[str, Any]) -> str:
    """preferred_username, else the e-mail, else the subject; "-2", "-3"... when taken (a local
    account of the same name is another person until an admin says otherwise)."""
    base = _text(claims.get("preferred_username") or claims.get("email") or claims.get("sub"), USERNAME_LENGTH - 8)
    base = base or "user"
    users = get_user_model().objects
    candidate, n = base, 1
    while users.filter(username__iexact=candidate).exists():
        n += 1
        candidate = f"{base}-{n}"
    return candidate


def _text(value: Any, limit: int) -> str:
    return value.strip()[:limit] if isinstance(value, str) else ""


def display_name(claims: Mapping[str, Any]) -> str:
    for key in ("preferred_username", "email", "name", "sub"):
        text = _text(claims.get(key), 200)
        if text:
            return text
    return "(unnamed)"


