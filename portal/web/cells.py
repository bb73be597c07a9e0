"""Matrix cells rendered in Python: a 300 × 4 matrix has thousands of lines, and the
template engine's per-node cost made it the slowest page. Every value is escaped."""

from __future__ import annotations

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from portal.web.fleet import Cell


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
