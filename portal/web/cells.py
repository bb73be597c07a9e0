"""Matrix cells and overview tiles rendered in Python: a fleet of 300 services has thousands
of lines, and the template engine's per-node cost made these the slowest pages.

One `Renderer` per request: it looks up the viewer's timezone and the clock once, not per
line. Every value from a cluster or the catalog is escaped (`html.escape` with quotes,
as Django's `escape` does, without its lazy-string wrapper per call). Badges come from
`portal.web.badges.badge_html`, the markup the templates' `{% badge %}` tag writes too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from html import escape
from urllib.parse import quote

from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from portal.web.badges import badge_html
from portal.web.fleet import Cell, CellLine, ServiceRow
from portal.web.templatetags.portal import duration_since, localstamp
from portal.web.tiles import Tile


@dataclass(frozen=True)
class Offer:
    """"Open PR → 1.7.0" for a line that runs older than the newest acceptable release."""

    target: str
    href: str  # the pull request preview, the Updates page when too many apps, or the open PR
    title: str
    label: str = ""  # "Open PR → 1.7.0" unless said otherwise ("PR #12 → 1.7.0")


# (service row, line) -> an offer or None; the matrix view builds it from the delivery layer.
Offers = Callable[[ServiceRow, CellLine], Offer | None]

EMPTY = '<span class="muted">—</span>'
_EMPTY = SafeString(EMPTY)


_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


class Renderer:
    def __init__(self, offers: Offers | None = None) -> None:
        self.zone: tzinfo = timezone.get_current_timezone()
        self.offers = offers

    def stamp(self, value: datetime) -> str:
        """"Sun 2026-11-29 19:55 CET": strftime's format, built by hand, which costs a
        third as much for the thousand times a large matrix says since when."""
        try:
            local = value.astimezone(self.zone)
        except OverflowError:  # too near year 1 or 9999 to shift into the viewer's zone: say it in UTC
            local = value.astimezone(UTC)
        return (f"{_DAYS[local.weekday()]} {local.year:04d}-{local.month:02d}-{local.day:02d} "
                f"{local.hour:02d}:{local.minute:02d} {local.tzname() or ''}").rstrip()

    def title(self, line: CellLine, pins: str) -> str:
        title = ", ".join(line.clusters)
        if pins:
            title += " · " + pins
        if line.flags:
            several = len(line.clusters) > 1
            parts = [title]
            for flag in line.flags:
                if flag.since:
                    where = f"{flag.app} on {flag.cluster}" if several else flag.app
                    parts.append(f"{flag.label} since {self.stamp(flag.since)} ({where})")
            title = " · ".join(parts)
        return title

    def cell(self, row: ServiceRow, cell: Cell) -> SafeString:
        lines = cell.lines
        if not lines:
            return _EMPTY
        parts = []
        offers = self.offers
        for line in lines:
            where = badges = ""
            if line.flags or len(lines) > 1:
                label = line.clusters[0] if len(line.clusters) == 1 else f"{len(line.clusters)} clusters"
                where = f' <span class="muted">{escape(label)}</span>'
            if line.flags:
                problems = {(f.severity, f.label): None for f in line.flags}  # each problem once, in order
                badges = "".join(f" {badge_html(kind, text)}" for kind, text in problems)
            versions = escape(", ".join(line.versions)) if line.versions else "—"
            summary = line.pins
            pins = f' {badge_html("pins", "Git pins " + ", ".join(line.pinned))}' if summary else ""
            action = ""
            offer = offers(row, line) if offers is not None and line.versions else None
            if offer is not None:
                label = escape(offer.label or f"Open PR → {offer.target}")
                action = f' <a class="open-pr" href="{escape(offer.href)}" title="{escape(offer.title)}">{label}</a>'
            title = escape(self.title(line, summary))
            parts.append(
                f'<span class="cell-line" title="{title}"><span class="mono">{versions}</span>'
                f"{where}{badges}{pins}{action}</span>"
            )
        return SafeString("".join(parts))  # every piece above is escaped

    def tile(self, tile: Tile) -> SafeString:
        service = tile.service
        team = f' <span class="muted">· {escape(service.team)}</span>' if service.team else ""
        url = reverse("service", kwargs={"name": service.name})
        parts = [
            f'<article class="tile{" attention" if tile.attention else ""}" data-service="{escape(service.name)}">',
            f'<h3><a href="{escape(url)}">{escape(service.name)}</a>{team}</h3><dl>',
        ]
        for environment, versions in tile.versions:
            shown = f'<span class="mono">{escape(", ".join(versions))}</span>' if versions else EMPTY
            parts.append(f"<dt>{escape(environment.name)}</dt><dd>{shown}</dd>")
        parts.append("</dl>")
        for flag in tile.flags:
            title = f"{flag.app} on {flag.cluster} since {localstamp(flag.since)}"
            parts.append(
                f"<div>{badge_html(flag.severity, flag.label, title)} "
                f'<span class="muted">{escape(flag.cluster)} · for {escape(duration_since(flag.since))}</span></div>'
            )
        more = tile.problem_apps - len({(flag.cluster, flag.app) for flag in tile.flags})
        if more > 0:
            parts.append(f'<div class="muted">and {more} more: see the service page</div>')
        parts.append("</article>")
        return mark_safe("".join(parts))  # noqa: S308 - every piece above is escaped


def render_matrix(rows: list[ServiceRow], offers: Offers | None = None) -> None:
    """Give every cell its HTML (`cell.rendered`) in one pass."""
    renderer = Renderer(offers)
    for row in rows:
        for cell in row.cells:
            cell.rendered = renderer.cell(row, cell)


def render_tiles(tiles: list[Tile]) -> None:
    renderer = Renderer()
    for tile in tiles:
        tile.rendered = renderer.tile(tile)


def release(drawn: list) -> None:
    """Let go of a drawn page's objects. Django's template Context holds what it was given
    in a reference cycle (each ContextDict points back at its Context), so a large matrix's
    ten thousand rows, cells and lines would wait for the cyclic garbage collector, whose
    full passes then showed as 20 ms pauses on later requests; emptied here, reference
    counting frees them at once."""
    drawn.clear()


def preview_href(kind: str, items: list[str]) -> str:
    """The pull request preview for `app:service:version` items."""
    query = "&".join(f"item={quote(item, safe=':')}" for item in items)
    return f"{reverse('pr-preview')}?kind={quote(kind)}&{query}&mode=grouped"
