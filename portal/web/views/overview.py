from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from portal.findings.mutes import open_findings
from portal.kernel.accounts.roles import Role, requires_role
from portal.kernel.catalog.models import Cluster
from portal.web.cells import release
from portal.web.fleet import fleet_counts
from portal.web.hotpath import render_tiles
from portal.web.tiles import service_tiles


@requires_role(Role.VIEWER)
def overview(request: HttpRequest) -> HttpResponse:
    # Tiles needing attention first, then by name: what is wrong is what people look for.
    tiles = service_tiles()
    render_tiles(tiles)
    context = {
        "tiles": tiles,
        "counts": fleet_counts(),
        "findings": open_findings().count(),
        "has_clusters": Cluster.objects.exists(),
    }
    template = "web/_overview_body.html" if request.htmx else "web/overview.html"
    response = render(request, template, context)
    release(tiles)  # as the matrix does: not left to the cyclic garbage collector
    return response
