"""Sample alerts for a channel's "Send test": one per kind of alert, worded by the same
functions that word real ones (gitops_events.word_event, delivery_events.*), so a test shows
exactly what that alert looks like on the channel, buttons included. Only the title says it is
a test, and the key is the test's own (a test never joins an episode).

Every button of a sample must open something: a sample is built from the fleet's own rows (a
real application, a real rollback offer, a real pull request) wherever the fleet has one, so
its links carry real ids. Where it has none (a fresh install), the sample is worded from rows
made up here and never saved, and carries only the portal links that name no made-up row: a
"Rollback PR" button for an application that does not exist would open an error, a made-up
commit or pull request link a forge's 404.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from django.urls import Resolver404, resolve

from gitops.models import GitOpsApp, VersionChange
from gitops.rows import ARGO, FLUX
from portal.delivery import rollbacks
from portal.delivery.current_pins import pin_summary, pinned_versions
from portal.delivery.deployments import Progress, Waiting
from portal.delivery.models import PullRequest
from portal.delivery.rollbacks import RollbackOffer
from portal.kernel.catalog.models import Cluster, Environment, Service
from portal.notifications import delivery_events, gitops_events
from portal.notifications.events import Event, base_url

SAMPLES = [
    ("degraded", "Degraded (with a rollback, if one is on offer)"),
    ("out_of_sync", "Out of sync, waiting for a manual sync"),
    ("suspended", "Suspended Flux object"),
    ("pr_checks_failed", "Checks failing on a portal PR"),
    ("merged_not_deployed", "Merged but not deployed"),
    ("rollback_offered", "Rollback offered"),
]
SAMPLE_NAMES = [name for name, _ in SAMPLES]
MADE_UP = "made up: the fleet has no such row yet, so links naming one are left out"

_GIT = "https://github.com/acme-shop/gitops.git"


def _made_up_app(at: datetime, **fields: object) -> GitOpsApp:
    env = Environment(name="prod", order=3, production=True)
    cluster = Cluster(name="prod-eu-1", environment=env)
    # No synced revision: a made-up commit's link would open a forge's 404.
    defaults: dict[str, object] = {
        "tool": ARGO, "kind": "Application", "namespace": "argocd", "name": "checkout-prod",
        "repo_url": _GIT, "path": "apps/checkout/overlays/prod", "target_revision": "main",
        "sync_status": "Synced", "health_status": "Healthy", "sync_since": at - timedelta(minutes=15),
        "health_since": at - timedelta(minutes=15), "running": {"checkout": ["1.7.0"]},
    }
    defaults.update(fields)
    app = GitOpsApp(**defaults)
    app.cluster = cluster
    return app


def _made_up_offer(at: datetime) -> RollbackOffer:
    return RollbackOffer(app_id=0, app="checkout-prod", cluster="prod-eu-1", environment="prod", service="checkout",
                         current="1.7.0", previous="1.6.0", replaced_at=at - timedelta(hours=1),
                         failing_since=at - timedelta(minutes=15),
                         failure="Degraded: Deployment checkout exceeded its progress deadline")


def _made_up_pull_request(at: datetime, **fields: object) -> PullRequest:
    # No URL: a made-up pull request's link would open a forge's 404.
    defaults: dict[str, object] = {
        "kind": PullRequest.Kind.UPGRADE, "services": ["checkout"], "environment": "prod",
        "image": "ghcr.io/acme-shop/checkout", "from_version": "1.6.0", "to_version": "1.7.0",
        "repository": _GIT, "number": 42, "branch": "portal/upgrade-checkout-1.7.0-prod", "url": "",
        "title": "Update checkout to 1.7.0 in prod", "checks": "fail", "checks_failed_notified_at": at,
        "merged_at": at - timedelta(hours=2),
    }
    defaults.update(fields)
    return PullRequest(**defaults)


def _fleet_apps(tool: str) -> list[GitOpsApp]:
    """The fleet's applications of `tool` first, then the others, that deploy a service in an environment."""
    found = list(
        GitOpsApp.objects.filter(cluster__environment__isnull=False, services__isnull=False)
        .select_related("cluster__environment", "argocd_instance")
        .distinct()
        .order_by("cluster__environment__order", "cluster__name", "namespace", "name")[:200]
    )
    return sorted(found, key=lambda app: app.tool != tool)


def _services(app: GitOpsApp) -> list[str]:
    return sorted(s.name for s in app.services.all())


def _as_if(app: GitOpsApp, **fields: object) -> GitOpsApp:
    """A copy of a real row in the state the sample shows, never saved."""
    shown = copy.copy(app)
    for name, value in fields.items():
        setattr(shown, name, value)
    return shown


def _real_offer(at: datetime) -> tuple[GitOpsApp, RollbackOffer] | None:
    failing = list(rollbacks.failing_apps(at).select_related("cluster__environment", "argocd_instance")[:50])
    for app_id, offers in rollbacks.offers_for_apps(failing, now=at).items():
        if offers:
            return next(app for app in failing if app.pk == app_id), offers[0]
    return None


# The portal pages a link may open whatever rows exist: lists, filtered or not.
ROWLESS_PAGES = frozenset({"gitops", "delivery", "overview"})


def _page_of(path: str) -> str | None:
    try:
        return resolve(urlsplit(path).path).url_name
    except Resolver404:
        return None


def _portal_links_only(event: Event) -> Event:
    """A sample worded from made-up rows: only its links to portal pages that name no row (a
    list filtered to the made-up app), never a preview, a forge or Argo CD link for it."""
    base = base_url()
    kept = tuple(link for link in event.links
                 if link.url.startswith(base + "/") and _page_of(link.url[len(base):]) in ROWLESS_PAGES)
    facts = (*event.facts, ("Sample", MADE_UP))
    return replace(event, links=kept, facts=facts)


def _degraded(at: datetime) -> Event:
    real = _real_offer(at)
    if real is not None:
        app = real[0]  # build_event finds its offer again, as the real alert does
        return gitops_events.build_event(app, app.health_since or at, at)
    start = at - timedelta(minutes=15)
    fleet = _fleet_apps(ARGO)
    if fleet:
        app = _as_if(fleet[0], health_status="Degraded", health_since=start,
                     health_message="Deployment exceeded its progress deadline")
        return gitops_events.word_event(app, start, at, services=_services(app), versions=[])
    checkout = Service(name="checkout")
    app = _made_up_app(at, health_status="Degraded",
                       health_message="Deployment checkout exceeded its progress deadline")
    versions = [VersionChange(service=checkout, from_version="1.6.0", to_version="1.7.0", at=at - timedelta(hours=1))]
    event = gitops_events.word_event(app, start, at, services=[], versions=versions, rollback=_made_up_offer(at))
    return _portal_links_only(event)


def _out_of_sync(at: datetime, **state: object) -> Event:
    start = at - timedelta(minutes=15)
    tool = FLUX if state.get("suspended") else ARGO
    fleet = [app for app in _fleet_apps(tool) if app.tool == tool]
    if fleet:
        app = _as_if(fleet[0], sync_status="OutOfSync", sync_since=start, **state)
        services = _services(app)
        pinned = pinned_versions([app.pk])
        notes = [pin_summary(pinned.get((app.pk, name), []), (app.running or {}).get(name, [])) for name in services]
        pins = "; ".join(note for note in notes if note)
        return gitops_events.word_event(app, start, at, services=services, versions=[], pins=pins)
    fields: dict[str, object] = {"sync_status": "OutOfSync", **state}
    if tool == FLUX:
        fields.update(tool=FLUX, kind="Kustomization", namespace="flux-system")
    app = _made_up_app(at, **fields)
    event = gitops_events.word_event(app, start, at, services=[], versions=[], pins="Git pins 1.7.0, runs 1.6.0")
    return _portal_links_only(event)


def _pull_request(at: datetime, state: str) -> PullRequest | None:
    found = PullRequest.objects.filter(state=state).exclude(url="").order_by("-opened_at", "-id").first()
    if found is not None and state == PullRequest.State.OPEN:
        found.checks, found.checks_failed_notified_at = "fail", at
    return found


def sample(name: str, at: datetime) -> Event:
    """The sample alert `name` (one of SAMPLE_NAMES) as it would be sent at `at`."""
    if name == "degraded":
        event = _degraded(at)
    elif name == "out_of_sync":
        event = _out_of_sync(at, manual_sync=True)
    elif name == "suspended":
        event = _out_of_sync(at, suspended=True)
    elif name == "pr_checks_failed":
        pr = _pull_request(at, PullRequest.State.OPEN)
        if pr is not None:
            event = delivery_events.checks_failed_event(pr)
        else:
            event = _portal_links_only(delivery_events.checks_failed_event(_made_up_pull_request(at)))
    elif name == "merged_not_deployed":
        pr = _pull_request(at, PullRequest.State.MERGED)
        made_up = pr is None
        pr = pr or _made_up_pull_request(at, checks="pass")
        cluster = (pr.clusters or ["prod-eu-1"])[0]
        progress = Progress(targets=[cluster], waiting=[
            Waiting(cluster, "Argo CD syncs it by hand: someone must sync it")])
        event = delivery_events.not_deployed_event(pr, progress, at)
        event = _portal_links_only(event) if made_up else event
    elif name == "rollback_offered":
        real = _real_offer(at)
        if real is not None:
            event = delivery_events.rollback_event(real[1])
        else:
            event = _portal_links_only(delivery_events.rollback_event(_made_up_offer(at)))
    else:
        raise ValueError(f"no sample alert {name!r}")
    return replace(event, key=f"test:{name}:{at.isoformat()}", title=f"[Test] {event.title}")
