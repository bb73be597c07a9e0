"""Team ownership: which teams a user acts for, and the one rule of who may act on a service.

A team a user acts for is a Django auth group named `team:<name>`, so a local (break-glass)
user can be put on a team in the admin like any other group. An identity provider's groups
become teams at each sign-in (`sync_teams`) through PORTAL_OIDC_TEAM_GROUPS, and only through
it: a provider group whose name equals a team named on a service is not that team unless the
mapping lists it, so renaming a group in the provider never silently hands out a team.

With PORTAL_TEAM_SCOPED_ACTIONS on, a member (not an admin) acts only on services whose
`Service.team` is one of theirs; a service no team owns is refused to members until an admin
sets its team. `refusal` is that rule, worded once for pages, the API and MCP alike.
`teams_of` is kept in portal.kernel.accounts.roles beside the roles (both read the user's groups
once), so the audit log can name a user's teams without importing the catalog; it is re-exported here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group

from portal.kernel.accounts.roles import TEAM_PREFIX as PREFIX
from portal.kernel.accounts.roles import Role, forget_groups, has_role, teams_of
from portal.kernel.catalog.models import Service

__all__ = ["PREFIX", "Refusal", "refusal", "refused", "scoped", "sync_teams", "team_of", "teams_of"]


def sync_teams(user: Any, idp_groups: Iterable[str]) -> None:
    """Make `user`'s teams what the provider's groups map to now: teams added and removed at
    each sign-in, so leaving a group in the provider ends acting for its team."""
    mapping: dict[str, str] = settings.PORTAL_OIDC_TEAM_GROUPS
    wanted = {PREFIX + mapping[group] for group in idp_groups if group in mapping}
    held = set(user.groups.filter(name__startswith=PREFIX).values_list("name", flat=True))
    if held - wanted:
        user.groups.remove(*Group.objects.filter(name__in=held - wanted))
    if wanted - held:
        user.groups.add(*(Group.objects.get_or_create(name=name)[0] for name in sorted(wanted - held)))
    forget_groups(user)


def scoped() -> bool:
    return bool(settings.PORTAL_TEAM_SCOPED_ACTIONS)


@dataclass(frozen=True)
class Refusal:
    """Why a user may not act on a service: the words shown, the service and its owning team
    ("" when no team owns it)."""

    message: str
    service: str
    team: str


def refused(user: Any, services: Iterable[Service | str]) -> Refusal | None:
    """The first of `services` (instances or names) `user` may not act on, or None when they
    may act on all. Admins, and everybody while team scope is off, may act on every service.
    A name the catalog does not know is owned by no team."""
    if not scoped() or has_role(user, Role.ADMIN):
        return None
    rows = _services(services)
    mine = teams_of(user)
    outside = [row for row in rows if not row.team or row.team not in mine]
    if not outside:
        return None
    first = outside[0]
    yours = f"you act for {', '.join(sorted(mine))}" if mine else "you act for no team"
    if first.team:
        message = f"{first.name} is owned by team {first.team}; {yours}. Ask a {first.team} member or an admin."
    else:
        message = f"No team owns {first.name}; {yours}. An admin can set its owning team on the service."
    others = [row.name for row in outside[1:]]
    if others:
        message += f" Also outside your teams: {', '.join(others)}."
    return Refusal(message, first.name, first.team)


def refusal(user: Any, services: Iterable[Service | str]) -> str | None:
    """The refusal's text, or None when `user` may act on every one of `services`."""
    found = refused(user, services)
    return found.message if found is not None else None


def team_of(services: Iterable[Service | str]) -> str:
    """The owning teams of `services`, joined: what an audit row names for an act on them."""
    return ", ".join(sorted({row.team for row in _services(services) if row.team}))


def _services(services: Iterable[Service | str]) -> list[Service]:
    """Instances as given, names looked up at once, in the order given (a name the catalog
    does not know stands for a service with no team)."""
    given = list(dict.fromkeys(services))
    names = [s for s in given if isinstance(s, str)]
    known = {row.name: row for row in Service.objects.filter(name__in=names)} if names else {}
    return [s if isinstance(s, Service) else known.get(s) or Service(name=s) for s in given]
