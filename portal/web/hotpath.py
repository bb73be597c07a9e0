"""The pages' one hand-written hot path: matrix cells and overview tiles drawn in Python.

Everything else is drawn by templates. These two are drawn here because a benchmark shows it
pays. On the 10,000-application fleet bench/pages.py seeds (300 services × 4 environments,
~1,000 matrix lines, 300 tiles), CPU time per request (time.process_time, the view called as
the server calls it, median of 15, SQLite, December 2026):

                       templates (fragments per line/tile)   this module
    /matrix                       182 ms                        82 ms
    / (overview)                  102 ms                        51 ms

The template engine's per-node cost (an include, a `with` and a dozen variable lookups per
line) doubled both pages, which grow with the fleet (the budget: 300 ms at 50,000 applications).

What each line says (its title, where it runs, its problems, its offer) is worked out in
portal.web.cells (`LineView`, `CellView`, `TileFlag`); this module only writes their markup.
Badges and pull request states are not spelled here: they come from their template fragments
(web/_badge.html, web/_pr_state.html). A badge's fragment is drawn once per shape and filled
(`badge`): at 100,000 applications the overview's tiles show 1,600 badges, and a template
render each cost half the page's CPU (225 ms -> 116 ms, process_time, min of 7, pages100k).
Values are escaped with `html.escape(quote=True)`, whose output is Django's
`escape`'s, without its lazy-string wrapper (3 µs a call, thousands of calls a page).
"""

from __future__ import annotations

from functools import cache
from html import escape

from django.template.loader import get_template
from django.urls import reverse
from django.utils.safestring import SafeString

from portal.web.badges import BADGE_TEMPLATE, PR_STATE_TEMPLATE, PrState
from portal.web.cells import CellChartOffers, CellView, CellViews, LineOffers, LineView
from portal.web.fleet import ServiceRow
from portal.web.tiles import Tile

EMPTY = '<span class="muted">—</span>'
_EMPTY = SafeString(EMPTY)


# Where a value goes in a badge's drawn skeleton: private-use characters, which escaping
# leaves alone and no cluster's string is expected to hold (one that does is drawn in full).
_SLOTS = {"kind": "\ue000kind\ue001", "label": "\ue000label\ue001", "title": "\ue000title\ue001"}


@cache
def _badge_skeleton(filled: tuple[bool, bool, bool]) -> str | None:
    """web/_badge.html drawn once with a slot for each non-empty value (`filled`: kind, label,
    title), or None when the fragment does not show each slot exactly once as given (a filter
    changed it): then every badge is drawn in full."""
    values = {name: slot if on else "" for (name, slot), on in zip(_SLOTS.items(), filled, strict=True)}
    drawn = get_template(BADGE_TEMPLATE).render(values)
    return drawn if all(drawn.count(slot) == 1 for slot in values.values() if slot) else None


def badge(kind: str, label: str, title: str = "") -> str:
    """The badge fragment (web/_badge.html), the one spelling of a badge. The fragment is drawn
    once per shape and each badge fills its slots (escaped as Django escapes): the overview at
    100,000 applications drew 1,600 badges, a template render each."""
    values = {"kind": kind, "label": label, "title": title}
    skeleton = _badge_skeleton((bool(kind), bool(label), bool(title)))
    if skeleton is None or any("\ue000" in value for value in values.values()):
        return get_template(BADGE_TEMPLATE).render(values)
    for name, value in values.items():
        if value:
            skeleton = skeleton.replace(_SLOTS[name], escape(value))
    return skeleton


def pr_state(state: PrState) -> str:
    """The pull request state fragment (web/_pr_state.html)."""
    return get_template(PR_STATE_TEMPLATE).render({"s": state})


def line_html(line: LineView) -> str:
    where = f' <span class="muted">{escape(line.where)}</span>' if line.where else ""
    badges = "".join(f" {badge(kind, text)}" for kind, text in line.problems)
    pins = f" {badge('pins', line.pins)}" if line.pins else ""
    action = ""
    offer = line.offer
    if offer is not None:
        action = f" {pr_state(offer.pr)}" if offer.pr is not None else ""
        if offer.no_pr:
            action += f' <span class="muted no-pr" title="{escape(offer.no_pr)}">no PR: no Git location</span>'
        elif offer.href:
            action += (f' <a class="open-pr" href="{escape(offer.href)}" title="{escape(offer.title)}">'
                       f"{escape(offer.text)}</a>")
    versions = escape(line.versions) if line.versions else "—"
    return (
        f'<span class="cell-line" title="{escape(line.title)}"><span class="mono">{versions}</span>'
        f"{where}{badges}{pins}{action}</span>"
    )


def cell_html(view: CellView | None) -> SafeString:
    """A cell: its lines in sight, the disclosure holding the rest, its chart offer."""
    if view is None:
        return _EMPTY
    parts = [line_html(line) for line in view.lines]
    if view.more:
        parts.append(
            # Swapped into itself (innerHTML, set on the matrix table, which the
            # disclosure inherits). Every line is on the service page too, for a
            # browser without htmx; a fallback link per cell was a tenth of the page.
            f'<details class="cell-more" hx-get="{escape(view.more_href)}" hx-trigger="toggle once">'
            f"<summary>{escape(view.more)}</summary></details>"
        )
    chart = view.chart
    if chart is not None:
        inner = f'<a class="open-pr" href="{escape(chart.href)}">{escape(chart.text)}</a>' if chart.href \
            else escape(chart.text)
        if chart.no_pr:
            inner += f' <span class="muted no-pr" title="{escape(chart.no_pr)}">no PR: no Git location</span>'
        parts.append(f'<span class="cell-line chart-offer" data-chart="{escape(chart.chart)}" '
                     f'title="{escape(chart.title)}">{inner}</span>')
    return SafeString("".join(parts))  # every piece above is escaped


def folded_html(summary: str, lines: list[LineView]) -> SafeString:
    """What the disclosure of a folded cell holds once opened: its summary and its lines."""
    return SafeString(f"<summary>{escape(summary)}</summary>" + "".join(line_html(line) for line in lines))


def tile_html(tile: Tile, service_url: str) -> SafeString:
    service = tile.service
    team = f' <span class="muted">· {escape(service.team)}</span>' if service.team else ""
    parts = [
        f'<article class="tile{" attention" if tile.attention else ""}" data-service="{escape(service.name)}">',
        f'<h3><a href="{escape(service_url)}">{escape(service.name)}</a>{team}</h3><dl>',
    ]
    for environment, versions in tile.versions:
        shown = f'<span class="mono">{escape(", ".join(versions))}</span>' if versions else EMPTY
        parts.append(f"<dt>{escape(environment.name)}</dt><dd>{shown}</dd>")
    parts.append("</dl>")
    for shown_flag in CellViews.tile_flags(tile):
        flag = shown_flag.flag
        parts.append(f"<div>{badge(flag.severity, flag.label, shown_flag.title)} "
                     f'<span class="muted">{escape(flag.cluster)} · {escape(shown_flag.lasted)}</span></div>')
    if tile.more > 0:
        parts.append(f'<div class="muted">and {tile.more} more: see the service page</div>')
    parts.append("</article>")
    return SafeString("".join(parts))  # every piece above is escaped


def render_matrix(
    rows: list[ServiceRow], offers: LineOffers | None = None, charts: CellChartOffers | None = None
) -> None:
    """Give every cell its HTML (`cell.rendered`) in one pass."""
    views = CellViews(offers, charts)
    for row in rows:
        for cell in row.cells:
            cell.rendered = cell_html(views.cell(row, cell) if cell.lines else None)


def render_tiles(tiles: list[Tile]) -> None:
    """Give every tile its HTML (`tile.rendered`)."""
    for tile in tiles:
        tile.rendered = tile_html(tile, reverse("service", kwargs={"name": tile.service.name}))
