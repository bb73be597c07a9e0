"""The profile page: your role, the teams you act for (and whether team scope is on), and your
personal API tokens (create, see once, revoke)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache

from portal.kernel.accounts import teams, tokens
from portal.kernel.accounts.roles import Role, requires_role, teams_of


@never_cache  # the one response that shows a new token must not be kept by any cache
@requires_role(Role.VIEWER)
def profile(request: HttpRequest) -> HttpResponse:
    created = None
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "create":
            token, plain = tokens.issue(request.user, request.POST.get("name", ""))
            # Rendered directly, not redirected: the plain token lives only in this response.
            created = {"token": token, "plain": plain}
        elif action == "revoke":
            token_id = request.POST.get("token", "")
            if token_id.isdigit() and tokens.revoke(request.user, int(token_id)):
                messages.success(request, "Token revoked: requests with it are refused from now on.")
            else:
                messages.error(request, "No such active token.")
            return redirect("profile")
        else:
            messages.error(request, "Unknown action.")
            return redirect("profile")
    context = {
        "api_tokens": request.user.api_tokens.all(),
        "created": created,
        "teams": sorted(teams_of(request.user)),
        "team_scoped": teams.scoped(),
    }
    return render(request, "accounts/profile.html", context)
