from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from portal.accounts.roles import Role, requires_role
from portal.web.fleet import service_rows


@requires_role(Role.VIEWER)
def matrix(request: HttpRequest) -> HttpResponse:
    environments, rows = service_rows()
    context = {"environments": environments, "rows": rows}
    template = "web/_matrix_body.html" if request.htmx else "web/matrix.html"
    return render(request, template, context)
