"""Matrix cells and overview tiles rendered in Python: a fleet of 300 services has thousands
of lines, and the template engine's per-node cost made these the slowest pages.

One `Renderer` per request: it looks up the viewer's timezone and the clock once, not per
line. Every value from a cluster or the catalog is escaped (`html.escape` with quotes,
as Django's `escape` does, without its lazy-string wrapper per call). Badges come from
`portal.web.badges.badge_html`, the markup the templates' `{% badge %}` tag writes too.

At fleet scale (500 clusters) a cell folds (`Cell.fold`): its first problems, then a
disclosure "9 versions on 167 clusters" whose lines the cell partial (`matrix-cell`) draws
with this same renderer when it opens; titles name a few clusters, not all of them. That
keeps a 50,000-application matrix under 500 KB.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from html import escape
from urllib.parse import urlencode

from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from portal.kernel.links import OfferItem, preview_url
from portal.web.badges import badge_html
from portal.web.fleet import Cell, CellLine, ServiceRow
from portal.web.templatetags.portal import duration_since, localstamp
from portal.web.tiles import Tile


@dataclass(frozen=True)
class LineOffer:
    """"Open PR → 1.7.0" for a line that runs older than the newest acceptable release."""

    target: str
    href: str  # the pull request preview, the Updates page when too many apps, or the open PR
    title: str
    label: str = ""  # "Open PR → 1.7.0" unless said otherwise ("PR #12 → 1.7.0")
    pr_html: str = ""  # the PR state badge (portal.web.badges.pr_state_html), drawn as it is, before the link
    no_pr: str = ""  # no pull request can be proposed, and why: shown instead of a link (href unused)


# (service row, line) -> an offer or None; the matrix view builds it from the delivery layer.
LineOffers = Callable[[ServiceRow, CellLine], LineOffer | None]


@dataclass(frozen=True)
class CellChartOffer:
    """"chart 0.3.1 → 0.3.2" for a cell whose applications pin a chart behind the newest version
    the service's policy accepts (`upgrades.charts_behind`), drawn once per cell, after its lines."""

    chart: str
    pinned: str
    target: str
    href: str  # the chart upgrade's preview, the Updates page's charts for several apps; "" for a viewer
    apps: int = 1
    no_pr: str = ""  # its one application cannot get a pull request, and why


# (service id, environment name) -> the cell's chart offer.
CellChartOffers = Mapping[tuple[int, str], CellChartOffer]

EMPTY = '<span class="muted">—</span>'
_EMPTY = SafeString(EMPTY)


# A line's title names its first few clusters and problems, not a hundred of them.
TITLE_CLUSTERS = 4
TITLE_FLAGS = 4


def _first(names: list[str], count: int, noun: str) -> str:
    if len(names) <= count:
        return ", ".join(names)
    return f"{', '.join(names[:count])} and {len(names) - count} more {noun}"


def folded_summary(lines: list[CellLine]) -> str:
    """"9 versions on 167 clusters · 4 with problems": what a folded cell holds."""
    versions = {version for line in lines for version in line.versions}
    clusters = {cluster for line in lines for cluster in line.clusters}
    troubled = {cluster for line in lines if line.flags for cluster in line.clusters}
    text = (f"{len(versions)} version{'' if len(versions) == 1 else 's'} on "
            f"{len(clusters)} cluster{'' if len(clusters) == 1 else 's'}")
    if troubled:
        text += f" · {len(troubled)} with problems"
    return text


def cell_href(service: str, environment: str, base: str | None = None) -> str:
    """The cell partial: a folded cell's lines, loaded when its disclosure opens; `base`: the
    partial's path reversed once by the caller (a large matrix has hundreds of folded cells,
    and reverse() cost more than the rest of their link)."""
    return f"{base or reverse('matrix-cell')}?{urlencode({'service': service, 'environment': environment})}"


_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


class Renderer:
    def __init__(self, offers: LineOffers | None = None, charts: CellChartOffers | None = None) -> None:
        self.zone: tzinfo = timezone.get_current_timezone()
        self.offers = offers
        self.charts = charts or {}
        self.cell_base = reverse("matrix-cell")

    def chart(self, offer: CellChartOffer) -> str:
        """A cell's chart offer, short like an image offer: a link for a member, a note otherwise."""
        several = f" ({offer.apps} applications)" if offer.apps > 1 else ""
        title = escape(f"the {offer.chart} chart: pinned {offer.pinned}, the newest version its policy accepts is "
                       f"{offer.target}{several}")
        text = escape(f"chart {offer.pinned} → {offer.target}")
        inner = f'<a class="open-pr" href="{escape(offer.href)}">{text}</a>' if offer.href else text
        if offer.no_pr:
            inner += f' <span class="muted no-pr" title="{escape(offer.no_pr)}">no PR: no Git location</span>'
        return f'<span class="cell-line chart-offer" data-chart="{escape(offer.chart)}" title="{title}">{inner}</span>'

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
        """Where a line runs and since when its problems last; a line of many clusters names
        the first few (the service page lists every one)."""
        title = _first(line.clusters, TITLE_CLUSTERS, "clusters")
        if pins:
            title += " · " + pins
        if line.flags:
            several = len(line.clusters) > 1
            parts = [title]
            dated = [flag for flag in line.flags if flag.since]
            for flag in dated[:TITLE_FLAGS]:
                where = f"{flag.app} on {flag.cluster}" if several else flag.app
                since = "since" if flag.exact else "at least since"
                parts.append(f"{flag.label} {since} {self.stamp(flag.since)} ({where})")  # type: ignore[arg-type]
            if len(dated) > TITLE_FLAGS:
                parts.append(f"and {len(dated) - TITLE_FLAGS} more")
            title = " · ".join(parts)
        return title

    def line(self, row: ServiceRow, line: CellLine, several: bool) -> str:
        """One line's HTML; `several`: its cell has other lines, so it says where it runs."""
        where = badges = ""
        if line.flags or several:
            label = line.clusters[0] if len(line.clusters) == 1 else f"{len(line.clusters)} clusters"
            where = f' <span class="muted">{escape(label)}</span>'
        if line.flags:
            problems = {(f.severity, f.label): None for f in line.flags}  # each problem once, in order
            badges = "".join(f" {badge_html(kind, text)}" for kind, text in problems)
        versions = escape(", ".join(line.versions)) if line.versions else "—"
        summary = line.pins
        pins = f' {badge_html("pins", "Git pins " + ", ".join(line.pinned))}' if summary else ""
        action = ""
        offer = self.offers(row, line) if self.offers is not None and line.versions else None
        if offer is not None and offer.no_pr:
            action = f" {offer.pr_html}" if offer.pr_html else ""
            action += f' <span class="muted no-pr" title="{escape(offer.no_pr)}">no PR: no Git location</span>'
        elif offer is not None:
            label = escape(offer.label or f"Open PR → {offer.target}")
            action = f" {offer.pr_html}" if offer.pr_html else ""
            if offer.href:
                action += f' <a class="open-pr" href="{escape(offer.href)}" title="{escape(offer.title)}">{label}</a>'
        title = escape(self.title(line, summary))
        return (
            f'<span class="cell-line" title="{title}"><span class="mono">{versions}</span>'
            f"{where}{badges}{pins}{action}</span>"
        )

    def cell(self, row: ServiceRow, cell: Cell) -> SafeString:
        """A cell's lines; a cell of many lines folds (`Cell.fold`) into its first problems and
        a disclosure that loads the rest from the cell partial when opened."""
        if not cell.lines:
            return _EMPTY
        shown, folded = cell.fold()
        several = len(cell.lines) > 1
        parts = [self.line(row, line, several) for line in shown]
        if folded:
            href = escape(cell_href(row.service.name, cell.environment.name, self.cell_base))
            parts.append(
                # Swapped into itself (innerHTML, set on the matrix table, which the
                # disclosure inherits). Every line is on the service page too, for a
                # browser without htmx; a fallback link per cell was a tenth of the page.
                f'<details class="cell-more" hx-get="{href}" hx-trigger="toggle once">'
                f"<summary>{escape(folded_summary(folded))}</summary></details>"
            )
        chart = self.charts.get((row.service.id, cell.environment.name)) if self.charts else None
        if chart is not None:
            parts.append(self.chart(chart))
        return SafeString("".join(parts))  # every piece above is escaped

    def folded(self, row: ServiceRow, cell: Cell) -> SafeString:
        """What the disclosure of a folded cell holds once opened: its summary and its lines."""
        _, folded = cell.fold()
        lines = "".join(self.line(row, line, True) for line in folded)
        return SafeString(f"<summary>{escape(folded_summary(folded))}</summary>{lines}")  # escaped above

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
            # The portal's first sight of a state is no duration: the state may be much older.
            lasted = (f"for {duration_since(flag.since)}" if flag.exact
                      else f"at least since {localstamp(flag.since)}")
            title = f"{flag.app} on {flag.cluster} {'since' if flag.exact else 'at least since'} "
            title += localstamp(flag.since)
            parts.append(
                f"<div>{badge_html(flag.severity, flag.label, title)} "
                f'<span class="muted">{escape(flag.cluster)} · {escape(lasted)}</span></div>'
            )
        more = tile.problem_apps - len({(flag.cluster, flag.app) for flag in tile.flags})
        if more > 0:
            parts.append(f'<div class="muted">and {more} more: see the service page</div>')
        parts.append("</article>")
        return mark_safe("".join(parts))  # noqa: S308 - every piece above is escaped


def render_matrix(
    rows: list[ServiceRow], offers: LineOffers | None = None, charts: CellChartOffers | None = None
) -> None:
    """Give every cell its HTML (`cell.rendered`) in one pass."""
    renderer = Renderer(offers, charts)
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


def preview_href(kind: str, items: list[OfferItem]) -> str:
    """The pull request preview of a matrix line's items (`portal.kernel.links.preview_url`)."""
    return preview_url(kind, items)
