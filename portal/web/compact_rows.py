"""The service page's compact rows rendered in Python: a service on 500 clusters folds all but
the first panels of an environment into one table row each (portal.web.views.service), and
the template engine's per-node cost of two hundred rows — badges, a preview link reversed per
row, a pull request's state — was most of the page's time.

The markup is the template's as it was, byte for byte; every value from a cluster, the
catalog or a forge is escaped (`html.escape` with quotes, as Django's autoescape does), and
badges and pull request states come from `portal.web.badges`, the one spelling of their
markup that the templates' tags write too.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from typing import Protocol
from urllib.parse import urlencode

from django.urls import reverse
from django.utils.safestring import SafeString

from gitops.models import GitOpsApp
from portal.delivery.upgrades import Behind
from portal.web.badges import Badge, badge_html, health_class, pr_state_html, sync_class


class Row(Protocol):
    """What a compact row reads of a panel (portal.web.views.service.Panel)."""

    @property
    def app(self) -> GitOpsApp: ...
    @property
    def badges(self) -> list[Badge]: ...
    @property
    def runs(self) -> list[str]: ...
    @property
    def upgrade(self) -> Behind | None: ...


def _upgrade(service: str, app_id: int, upgrade: Behind, can_act: bool, preview: str) -> str:
    """"Open PR → 1.7.0" (a member, and nothing proposes it yet), else the target and why no
    pull request can be proposed; then the pull request that proposes it, if any."""
    target = escape(upgrade.target)
    if can_act and upgrade.offered:
        query = urlencode({"kind": "upgrade", "service": service, "app": app_id, "to": upgrade.target})
        html = f'<a class="open-pr" href="{escape(f"{preview}?{query}")}">Open PR → {target}</a>'
    else:
        html = f'<span class="mono">{target}</span>'
        if upgrade.no_pr and not upgrade.pr:
            html += f' <span class="muted no-pr" title="{escape(upgrade.no_pr)}">no Git location</span>'
    if upgrade.pr:
        html += f" {pr_state_html(upgrade.pr, upgrade.pr_why)}"
    return html


def render_rows(rows: Iterable[Row], service: str, can_act: bool) -> SafeString:
    """The `<tr>` of each compact row, in order: cluster and application with their badges,
    sync, health, the versions it runs, and the newest acceptable release."""
    preview = reverse("pr-preview")  # once, not per row
    parts = []
    for row in rows:
        app = row.app
        cluster, name, namespace = escape(app.cluster.name), escape(app.name), escape(app.namespace)
        sync, health = app.sync_status, app.health_status
        badges = "".join(f" {badge_html(b.kind, b.label, b.title)}" for b in row.badges)
        runs = escape(", ".join(row.runs)) if row.runs else "—"
        upgrade = _upgrade(service, app.pk, row.upgrade, can_act, preview) if row.upgrade else ""
        parts.append(
            f'<tr data-app="{name}" data-cluster="{cluster}">\n'
            f'      <td>{cluster} · <span class="mono">{namespace}/{name}</span>{badges}</td>\n'
            f"      <td>{badge_html(sync_class(sync), sync)}</td><td>{badge_html(health_class(health), health)}</td>\n"
            f'      <td class="mono">{runs}</td>\n'
            f"      <td>{upgrade}</td>\n"
            "    </tr>"
        )
    return SafeString("".join(parts))  # every piece above is escaped
