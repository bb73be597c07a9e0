"""Rollback offers for pages that list applications (service panels, /gitops).

The view asks once for all the applications it shows (`offers_for_page(user, apps)`) and puts
the answer in its context as `rollbacks`; the template reads each application's offers with
`rollbacks|of_app:app.id`. Two queries per page at most, whatever the number of applications,
and none while the template renders.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.utils import timezone

from gitops.models import GitOpsApp
from portal.delivery import rollbacks
from portal.delivery.models import PullRequest
from portal.kernel.accounts.roles import Role, has_role
from portal.kernel.links import safe_http_url


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
            f"{self.offer.app} is {self.offer.failure} since {since}, after "
            f"{'the chart version ' if self.offer.chart else ''}{self.offer.current} replaced {self.offer.previous}"
        )


@dataclass
class PageOffers:
    can_act: bool  # a member may open the rollback PR; others see a note
    by_app: dict[int, list[ShownOffer]] = field(default_factory=dict)

    def of_app(self, app_id: int) -> list[ShownOffer]:
        return self.by_app.get(app_id, [])


def offers_for_page(user: object, apps: Iterable[GitOpsApp]) -> PageOffers:
    """Every rollback offer for `apps` (loaded with `cluster__environment`), with the rollback
    PR already open for each, if any."""
    page = PageOffers(can_act=user is not None and has_role(user, Role.MEMBER))
    found = rollbacks.offers_for_apps(list(apps))
    pending = rollbacks.open_rollbacks(o for offers in found.values() for o in offers)
    for app_id, offers in found.items():
        page.by_app[app_id] = [
            ShownOffer(o, rollbacks.preview_url(o), pending.get(rollbacks.offer_key(o)))
            for o in offers
        ]
    return page
