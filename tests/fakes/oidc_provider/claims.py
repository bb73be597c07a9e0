"""The `groups` claim, as Okta, Keycloak or Dex send it: the user's group names, for the scope
`groups`, in the userinfo answer and (unless switched off) in the ID token."""

from django.conf import settings
from oidc_provider.lib.claims import ScopeClaims


def group_names(user) -> list[str]:
    return sorted(user.groups.values_list("name", flat=True))


class GroupsScopeClaims(ScopeClaims):
    info_groups = ("Groups", "The groups you belong to.")

    def scope_groups(self) -> dict:
        return {"groups": group_names(self.user)}


def groups_in_id_token(id_token, user, token, request, **kwargs):
    if settings.FAKE_OIDC_GROUPS_IN_ID_TOKEN and "groups" in token.scope:
        id_token["groups"] = group_names(user)
    if "email" in token.scope:
        id_token["email"] = user.email
    if "profile" in token.scope:
        id_token["preferred_username"] = user.username
    return id_token
