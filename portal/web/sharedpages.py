"""Page bodies kept for every viewer who would see the same thing, until what they show changes.

Thirty people on the overview, the matrix or /gitops at once ask for the same HTML: rendering it
anew for each is what made the portal serve 14 requests a second on two cores. A body is kept
under a key made of everything that can make it differ:
- the data revision (portal.kernel.changelog): moves when a transaction that changed what pages
  show commits, in any process;
- the minute: bodies word durations against the clock ("for 5 min", "stale since"), and polls'
  own bookkeeping (last polled at) moves no revision;
- the viewer's role (offers and buttons), a member's teams when team scope is on, time zone
  (times are shown in it), and the path with its query (filters, page, sort);
- whatever else a page names (`vary`).
Only bodies are kept, never the page around them: the header names the user and carries their
CSRF token. A body's template must therefore not use the user, the session, messages or
`csrf_token` beyond the role (tests/web/test_shared_pages.py checks the templates).

Kept by portal.kernel.changelog.kept in the `pages` cache: Redis when CACHE_URL is set (shared by
every web process), else each process's memory.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from portal.kernel.accounts import teams
from portal.kernel.accounts.roles import Role, role_of, teams_of
from portal.kernel.changelog.kept import kept


def shared_body(request: HttpRequest, page: str, template: str, context: Callable[[], dict],
                *, vary: tuple[str, ...] = (), after: Callable[[dict], None] | None = None) -> SafeString:
    """The body `template` renders from `context()` for this request, kept as described above;
    `context` is only called when the body is not kept, and `after` with it once rendered."""

    def render() -> str:
        values = context()
        body = render_to_string(template, values, request)
        if after is not None:
            after(values)
        return body

    user = getattr(request, "user", None)
    role = role_of(user)
    # With team scope on, what a member may act on is their teams' business: kept per team set.
    acts_for = ",".join(sorted(teams_of(user))) if teams.scoped() and role == Role.MEMBER else ""
    parts = (role.name if role is not None else "-", acts_for, timezone.get_current_timezone_name(),
             request.get_full_path(), *vary)
    return mark_safe(kept(f"page:{page}", parts, render))  # noqa: S308 - the template's own escaped output
