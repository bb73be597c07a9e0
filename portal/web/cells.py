"""Matrix cells and overview tiles rendered in Python: a fleet of 300 services has thousands
of lines, and the template engine's per-node cost made these the slowest pages. Every
value is escaped."""

from __future__ import annotations

from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from portal.web.fleet import Cell, ServiceRow
from portal.web.templatetags.portal import duration_since, localstamp

TILE_FLAGS = 4  # a tile shows the first few problems; the service page has them all


def cell_html(cell: Cell) -> SafeString:
    shown = cell.shown
    if not shown:
        return mark_safe('<span class="muted">—</span>')  # noqa: S308 - constant
    parts = []
    for line in shown:
        where = ""
        if len(shown) > 1 or line.flags:
            label = line.clusters[0] if len(line.clusters) == 1 else f"{len(line.clusters)} clusters"
            where = f' <span class="muted">{escape(label)}</span>'
        badges = "".join(f' <span class="badge {escape(f.severity)}">{escape(f.label)}</span>' for f in line.flags)
        versions = escape(", ".join(line.versions)) if line.versions else "—"
        pins = f' <span class="badge pins">Git pins {escape(", ".join(line.pinned))}</span>' if line.pins else ""
        parts.append(
            f'<span class="cell-line" title="{escape(line.title)}"><span class="mono">{versions}</span>'
            f"{where}{badges}{pins}</span>"
        )
    return mark_safe("".join(parts))  # noqa: S308 - every piece above is escaped


def tile_html(row: ServiceRow) -> SafeString:
    service = row.service
    team = f' <span class="muted">· {escape(service.team)}</span>' if service.team else ""
    url = reverse("service", kwargs={"name": service.name})
    parts = [
        f'<article class="tile{" attention" if row.attention else ""}" data-service="{escape(service.name)}">',
        f'<h3><a href="{escape(url)}">{escape(service.name)}</a>{team}</h3><dl>',
    ]
    for cell in row.cells:
        versions = cell.versions
        shown = '<span class="muted">—</span>'
        if versions:
            shown = f'<span class="mono">{escape(", ".join(versions))}</span>'
        parts.append(f"<dt>{escape(cell.environment.name)}</dt><dd>{shown}</dd>")
    parts.append("</dl>")
    flags = row.flags
    for flag in flags[:TILE_FLAGS]:
        title = f"{flag.app} on {flag.cluster} since {localstamp(flag.since)}"
        parts.append(
            f'<div><span class="badge {escape(flag.severity)}" title="{escape(title)}">{escape(flag.label)}</span> '
            f'<span class="muted">{escape(flag.cluster)} · for {escape(duration_since(flag.since))}</span></div>'
        )
    if len(flags) > TILE_FLAGS:
        parts.append(f'<div class="muted">and {len(flags) - TILE_FLAGS} more: see the service page</div>')
    parts.append("</article>")
    return mark_safe("".join(parts))  # noqa: S308 - every piece above is escaped
