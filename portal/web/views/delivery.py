from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from portal.accounts.roles import Role, requires_role


@requires_role(Role.VIEWER)
def delivery(request: HttpRequest) -> HttpResponse:
    # No pull request is opened or tracked yet: an honest empty state.
    return render(request, "web/delivery.html", {})
