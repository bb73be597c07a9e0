"""What matrix cells and overview tiles say: the words of each line (its title, where it runs,
its problems, its offer) worked out once per request; portal.web.hotpath writes their markup.

One `CellViews` per request: it looks up the viewer's timezone and the clock once, not per line.

At fleet scale (500 clusters) a cell folds (`Cell.fold`): its first problems, then a
disclosure "9 versions on 167 clusters" whose lines the cell partial (`matrix-cell`) draws
with these same views when it opens; titles name a few clusters, not all of them. That
keeps a 50,000-application matrix under 500 KB.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from urllib.parse import urlencode

from django.urls import reverse
from django.utils import timezone

from portal.kernel.links import OfferItem, preview_url
from portal.web.badges import PrState
from portal.web.fleet import Cell, CellLine, Flag, ServiceRow
from portal.web.templatetags.portal_tags import duration_since, localstamp
from portal.web.tiles import Tile


@dataclass(frozen=True)
class LineOffer:
    """"Open PR → 1.7.0" for a line that runs older than the newest acceptable release."""

    target: str
    href: str  # the pull request preview, the Updates page when too many apps, or the open PR
    title: str
    label: str = ""  # "Open PR → 1.7.0" unless said otherwise ("PR #12 → 1.7.0")
    pr: PrState | None = None  # the pull request that proposes it (portal.web.badges.pr_state), before the link
    no_pr: str = ""  # no pull request can be proposed, and why: shown instead of a link (href unused)

    @property
    def text(self) -> str:
        return self.label or f"Open PR → {self.target}"


# (service row, line) -> an offer or None; the matrix view builds it from the delivery layer.
LineOffers = Callable[[ServiceRow, CellLine], LineOffer | None]


@dataclass(frozen=True)
class CellChartOffer:
    """"chart 0.3.1 → 0.3.2" for a cell whose applications pin a chart behind the newest version
    the service's policy accepts (`chart_upgrades.charts_behind`), drawn once per cell, after its lines."""

    chart: str
    pinned: str
    target: str
    href: str  # the chart upgrade's preview, the Updates page's charts for several apps; "" for a viewer
    apps: int = 1
    no_pr: str = ""  # its one application cannot get a pull request, and why

    @property
    def text(self) -> str:
        return f"chart {self.pinned} → {self.target}"

    @property
    def title(self) -> str:
        several = f" ({self.apps} applications)" if self.apps > 1 else ""
        return (f"the {self.chart} chart: pinned {self.pinned}, the newest version its policy accepts is "
                f"{self.target}{several}")


# (service id, environment name) -> the cell's chart offer.
CellChartOffers = Mapping[tuple[int, str], CellChartOffer]


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


@dataclass(slots=True)
class LineView:
    """What one line of a cell shows (portal.web.hotpath.line_html draws it)."""

    versions: str  # "1.6.0, 1.7.0"; "" when nothing runs (a Missing app)
    where: str  # its cluster, or "3 clusters", when its cell has other lines or it has problems
    problems: list[tuple[str, str]]  # (severity, label), each problem once, in order
    pins: str  # "Git pins 1.7.0" when Git pins something else than what runs
    title: str  # where it runs and since when its problems last
    offer: LineOffer | None = None


@dataclass(slots=True)
class CellView:
    """What one cell shows: the lines in sight, the disclosure holding the rest (`more`, its
    summary, "" when the cell does not fold) and the chart offer."""

    lines: list[LineView]
    more: str = ""
    more_href: str = ""
    chart: CellChartOffer | None = None


@dataclass(slots=True)
class TileFlag:
    """One of a tile's first problems, as its tile says it."""

    flag: Flag
    title: str  # "checkout-prod on prod-eu-1 since Mon 06:00"
    lasted: str  # "for 6 days", or "at least since Mon 06:00" when only the portal's first sight


_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


class CellViews:
    """The views of a request's cells, lines and tiles."""

    def __init__(self, offers: LineOffers | None = None, charts: CellChartOffers | None = None) -> None:
        self.zone: tzinfo = timezone.get_current_timezone()
        self.offers = offers
        self.charts = charts or {}
        self.cell_base = reverse("matrix-cell")

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

    def line(self, row: ServiceRow, line: CellLine, several: bool) -> LineView:
        """One line; `several`: its cell has other lines, so it says where it runs."""
        where = ""
        if line.flags or several:
            where = line.clusters[0] if len(line.clusters) == 1 else f"{len(line.clusters)} clusters"
        problems = list({(f.severity, f.label): None for f in line.flags})  # each problem once, in order
        summary = line.pins
        offer = self.offers(row, line) if self.offers is not None and line.versions else None
        return LineView(
            versions=", ".join(line.versions),
            where=where,
            problems=problems,
            pins="Git pins " + ", ".join(line.pinned) if summary else "",
            title=self.title(line, summary),
            offer=offer,
        )

    def cell(self, row: ServiceRow, cell: Cell) -> CellView:
        """A cell's lines; a cell of many lines folds (`Cell.fold`) into its first problems and
        a disclosure that loads the rest from the cell partial when opened."""
        shown, folded = cell.fold()
        several = len(cell.lines) > 1
        view = CellView([self.line(row, line, several) for line in shown])
        if folded:
            view.more = folded_summary(folded)
            view.more_href = cell_href(row.service.name, cell.environment.name, self.cell_base)
        if self.charts:
            view.chart = self.charts.get((row.service.id, cell.environment.name))
        return view

    def folded(self, row: ServiceRow, cell: Cell) -> tuple[str, list[LineView]]:
        """What the disclosure of a folded cell holds once opened: its summary and its lines."""
        _, folded = cell.fold()
        return folded_summary(folded), [self.line(row, line, True) for line in folded]

    @staticmethod
    def tile_flags(tile: Tile) -> list[TileFlag]:
        found = []
        for flag in tile.flags:
            # The portal's first sight of a state is no duration: the state may be much older.
            stamp = localstamp(flag.since)
            lasted = f"for {duration_since(flag.since)}" if flag.exact else f"at least since {stamp}"
            title = f"{flag.app} on {flag.cluster} {'since' if flag.exact else 'at least since'} "
            found.append(TileFlag(flag, title + stamp, lasted))
        return found


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
