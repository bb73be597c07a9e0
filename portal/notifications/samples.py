"""Sample alerts for a channel's "Send test": one per kind of alert, worded by the same
functions that word real ones (gitops_events.word_event, delivery_events.*) from rows made
up here and never saved, so a test shows exactly what that alert looks like on the channel,
buttons included. Only the title says it is a test, and the key is the test's own (a test
never joins an episode)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from gitops.models import GitOpsApp, VersionChange
from portal.catalog.models import Cluster, Environment, Service
from portal.delivery.deployments import Progress, Waiting
from portal.delivery.models import PullRequest
from portal.delivery.rollbacks import RollbackOffer
from portal.notifications import delivery_events, gitops_events
from portal.notifications.events import Event

SAMPLES = [
    ("degraded", "Degraded, rollback on offer"),
    ("out_of_sync", "Out of sync, waiting for a manual sync"),
    ("suspended", "Suspended Flux object"),
    ("pr_checks_failed", "Checks failing on a portal PR"),
    ("merged_not_deployed", "Merged but not deployed"),
    ("rollback_offered", "Rollback offered"),
]
SAMPLE_NAMES = [name for name, _ in SAMPLES]

_GIT = "https://github.com/acme-shop/gitops.git"
_NEW, _OLD = "4f1d2c3b5a6978877665544332211aabbccddeef", "9a8b7c6d5e4f30211223344556677889900aabbc"


def _app(at: datetime, **fields: object) -> GitOpsApp:
    env = Environment(name="prod", order=3, production=True)
    cluster = Cluster(name="prod-eu-1", environment=env)
    defaults: dict[str, object] = {
        "tool": "argo", "kind": "Application", "namespace": "argocd", "name": "checkout-prod",
        "repo_url": _GIT, "path": "apps/checkout/overlays/prod", "target_revision": "main",
        "sync_status": "Synced", "health_status": "Healthy", "sync_since": at - timedelta(minutes=15),
        "health_since": at - timedelta(minutes=15), "synced_revision": _NEW, "previous_synced_revision": _OLD,
        "revision_changed_at": at - timedelta(hours=1), "running": {"checkout": ["1.7.0"]},
    }
    defaults.update(fields)
    app = GitOpsApp(**defaults)
    app.cluster = cluster
    return app


def _offer(at: datetime) -> RollbackOffer:
    return RollbackOffer(app_id=0, app="checkout-prod", cluster="prod-eu-1", environment="prod", service="checkout",
                         current="1.7.0", previous="1.6.0", replaced_at=at - timedelta(hours=1),
                         failing_since=at - timedelta(minutes=15),
                         failure="Degraded: Deployment checkout exceeded its progress deadline")


def _pull_request(at: datetime, **fields: object) -> PullRequest:
    defaults: dict[str, object] = {
        "kind": PullRequest.Kind.UPGRADE, "services": ["checkout"], "environment": "prod",
        "image": "ghcr.io/acme-shop/checkout", "from_version": "1.6.0", "to_version": "1.7.0",
        "repository": _GIT, "number": 42, "branch": "portal/upgrade-checkout-1.7.0-prod",
        "url": "https://github.com/acme-shop/gitops/pull/42", "title": "Update checkout to 1.7.0 in prod",
        "checks": "fail", "checks_failed_notified_at": at, "merged_at": at - timedelta(hours=2),
    }
    defaults.update(fields)
    return PullRequest(**defaults)


def sample(name: str, at: datetime) -> Event:
    """The sample alert `name` (one of SAMPLE_NAMES) as it would be sent at `at`."""
    checkout = Service(name="checkout")
    if name == "degraded":
        app = _app(at, health_status="Degraded",
                   health_message="Deployment checkout exceeded its progress deadline")
        versions = [VersionChange(service=checkout, from_version="1.6.0", to_version="1.7.0",
                                  at=at - timedelta(hours=1))]
        event = gitops_events.word_event(app, at - timedelta(minutes=15), at, services=["checkout"],
                                         versions=versions, rollback=_offer(at))
    elif name == "out_of_sync":
        app = _app(at, sync_status="OutOfSync", manual_sync=True)
        event = gitops_events.word_event(app, at - timedelta(minutes=15), at, services=["checkout"], versions=[],
                                         pins="Git pins 1.7.0, runs 1.6.0")
    elif name == "suspended":
        app = _app(at, tool="flux", kind="Kustomization", namespace="flux-system", sync_status="OutOfSync",
                   suspended=True)
        event = gitops_events.word_event(app, at - timedelta(minutes=15), at, services=["checkout"], versions=[],
                                         pins="Git pins 1.7.0, runs 1.6.0")
    elif name == "pr_checks_failed":
        event = delivery_events.checks_failed_event(_pull_request(at))
    elif name == "merged_not_deployed":
        progress = Progress(targets=["prod-eu-1"], waiting=[
            Waiting("prod-eu-1", "Argo CD syncs checkout-prod by hand: someone must sync it")])
        event = delivery_events.not_deployed_event(_pull_request(at, checks="pass"), progress, at)
    elif name == "rollback_offered":
        event = delivery_events.rollback_event(_offer(at))
    else:
        raise ValueError(f"no sample alert {name!r}")
    return replace(event, key=f"test:{name}:{at.isoformat()}", title=f"[Test] {event.title}")
