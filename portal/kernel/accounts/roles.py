"""Three roles, kept as Django groups: viewer < member < admin.

viewer reads everything; member may also act (open pull requests, ask for a poll);
admin may also configure (clusters, services, environments, policies). A superuser
is an admin. Views declare the role they need with `requires_role`; the decorator
also registers the view so a test can prove every write view is guarded.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.models import AnonymousUser, Group
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect


class Role(enum.IntEnum):
    VIEWER = 1
    MEMBER = 2
    ADMIN = 3

    @property
    def group_name(self) -> str:
        return self.name.lower()


TEAM_PREFIX = "team:"  # a group named so is a team its members act for (portal.kernel.accounts.teams)

# view name -> role it needs; filled by @requires_role as views are imported.
GUARDED_VIEWS: dict[str, Role] = {}


def role_of(user: Any) -> Role | None:
    """The highest role a user holds, or None (anonymous, or no role given yet)."""
    if user is None or isinstance(user, AnonymousUser) or not user.is_authenticated:
        return None
    if user.is_superuser:
        return Role.ADMIN
    names = group_names(user)
    for role in (Role.ADMIN, Role.MEMBER, Role.VIEWER):
        if role.group_name in names:
            return role
    return None


def group_names(user: Any) -> set[str]:
    """The names of `user`'s groups (roles and teams), read once and kept on the user object."""
    cached = getattr(user, "_portal_group_names", None)
    if cached is None:
        cached = set(user.groups.values_list("name", flat=True))
        user._portal_group_names = cached
    return cached


def teams_of(user: Any) -> frozenset[str]:
    """The teams `user` acts for: their `team:<name>` groups, read with the roles, once per
    request (the rule about teams is portal.kernel.accounts.teams; this is here so the audit
    log can name a user's teams without the catalog)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return frozenset()
    return frozenset(name.removeprefix(TEAM_PREFIX) for name in group_names(user) if name.startswith(TEAM_PREFIX))


def forget_groups(user: Any) -> None:
    """Drop the kept group names after changing `user`'s groups, so the next check reads them."""
    if hasattr(user, "_portal_group_names"):
        del user._portal_group_names


def has_role(user: Any, needed: Role) -> bool:
    role = role_of(user)
    return role is not None and role >= needed


def requires_role(needed: Role, *, name: str | None = None) -> Callable:
    """Anonymous users go to login; signed-in users without the role get 403."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        GUARDED_VIEWS[name or f"{view.__module__}.{view.__qualname__}"] = needed

        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not has_role(request.user, needed):
                raise PermissionDenied(f"This needs the {needed.group_name} role.")
            return view(request, *args, **kwargs)

        wrapped.required_role = needed  # type: ignore[attr-defined]
        return wrapped

    return decorate


def post_only(back: str) -> Callable:
    """A write view opened with GET (a link followed, a page reloaded) changes nothing and
    leads back to the page named `back` (a URL name)."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method != "POST":
                return redirect(back)
            return view(request, *args, **kwargs)

        return wrapped

    return decorate


def ensure_role_groups() -> None:
    for role in Role:
        Group.objects.get_or_create(name=role.group_name)


def grant(user: Any, role: Role) -> None:
    """Give a user exactly one role (removing the others)."""
    ensure_role_groups()
    others = Group.objects.filter(name__in=[r.group_name for r in Role if r is not role])
    user.groups.remove(*others)
    user.groups.add(Group.objects.get(name=role.group_name))
    forget_groups(user)
