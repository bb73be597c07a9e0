from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from portal.findings.mutes import open_findings
from portal.kernel.accounts.roles import Role, requires_role
from portal.kernel.catalog.models import Cluster
from portal.web.cells import release
from portal.web.fleet import fleet_counts
from portal.web.hotpath import render_tiles
from portal.web.sharedpages import shared_body
from portal.web.tiles import service_tiles


@require_safe
@requires_role(Role.VIEWER)
def overview(request: HttpRequest) -> HttpResponse:
    body = shared_body(request, "overview", "web/_overview_body.html", _body_context,
                       after=lambda context: release(context["tiles"]))
    if request.htmx:
        return HttpResponse(body)
    return render(request, "web/overview.html", {"body": body})


def _body_context() -> dict:
    # Tiles needing attention first, then by name: what is wrong is what people look for.
    tiles = service_tiles()
    render_tiles(tiles)
    return {
        "tiles": tiles,
        "counts": fleet_counts(),
        "findings": open_findings().count(),
        "has_clusters": Cluster.objects.exists(),
    }
