"""Rollback offers for pages that list applications (service panels, /gitops).

A page asks once for all its applications (`{% rollback_offers_for_panels environments as rollbacks %}`
or `{% rollback_offers_for_rows rows as rollbacks %}`), then each application's offers are
`rollbacks|of_app:app.id`: two queries per page at most, whatever the number of applications.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from django import template
from django.utils import timezone

from forges.models import PullRequest
from gitops.models import GitOpsApp
from portal.accounts.roles import Role, has_role
from portal.delivery import rollbacks
from portal.links import safe_http_url

register = template.Library()


@dataclass(frozen=True)
class ShownOffer:
    offer: rollbacks.RollbackOffer
    url: str  # the rollback PR's preview page
    open_pr: PullRequest | None

    @property
    def open_pr_link(self) -> str | None:
        return safe_http_url(self.open_pr.url) if self.open_pr else None

    @property
    def title(self) -> str:
        since = timezone.localtime(self.offer.failing_since).strftime("%a %Y-%m-%d %H:%M %Z")
        return (
            f"{self.offer.app} is {self.offer.failure} since {since}, after {self.offer.current} "
            f"replaced {self.offer.previous}"
        )


@dataclass
class PageOffers:
    can_act: bool
    by_app: dict[int, list[ShownOffer]] = field(default_factory=dict)


def _offers(context: template.Context, apps: Iterable[GitOpsApp]) -> PageOffers:
    request = context.get("request")
    page = PageOffers(can_act=bool(request) and has_role(request.user, Role.MEMBER))
    found = rollbacks.offers_for_apps(list(apps))
    pending = rollbacks.open_rollbacks(o for offers in found.values() for o in offers)
    for app_id, offers in found.items():
        page.by_app[app_id] = [
            ShownOffer(o, rollbacks.preview_url(o), pending.get((o.service, o.environment, o.previous)))
            for o in offers
        ]
    return page


@register.simple_tag(takes_context=True)
def rollback_offers_for_panels(context: template.Context, environments: Iterable) -> PageOffers:
    """For the service page: `environments` is [(environment, [panel with .app])]."""
    return _offers(context, (panel.app for _, panels in environments for panel in panels))


@register.simple_tag(takes_context=True)
def rollback_offers_for_rows(context: template.Context, rows: Iterable) -> PageOffers:
    """For /gitops: `rows` is [(app, badges, attention)]."""
    return _offers(context, (row[0] for row in rows))


@register.filter
def of_app(page: PageOffers | None, app_id: int) -> list[ShownOffer]:
    return page.by_app.get(app_id, []) if page else []
