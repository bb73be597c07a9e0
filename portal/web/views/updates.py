from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from portal.accounts.roles import Role, requires_role
from portal.catalog.models import Service


@requires_role(Role.VIEWER)
def updates(request: HttpRequest) -> HttpResponse:
    # Upstream releases are not read yet: the page says so rather than invent any.
    return render(request, "web/updates.html", {"service_count": Service.objects.count()})
