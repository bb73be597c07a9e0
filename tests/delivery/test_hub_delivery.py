"""A hub-managed app works exactly as a standalone one, end to end through real boundaries:
the hub read over HTTP from the Kubernetes API emulator, its app deployed to a cluster the
portal does NOT read (versions from `status.summary.images` only), tags from a real registry
(tests/fakes/oci_registry.py), pull requests previewed on the GitHub fake.

(a) After a version change the app goes Degraded: past the grace period a rollback to the
    version before is offered on the service panel and /gitops, previewed with its diff, and
    announced naming the destination cluster and its environment (never the hub's).
(b) A newer tag upstream: the app is behind on Updates under its destination, and the upgrade
    PR preview edits the pin in the app's repository.
"""

from __future__ import annotations

import copy
from datetime import timedelta

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from gitops import kinds
from gitops.models import GitOpsApp, RunningVersion, VersionChange
from gitops.polling import poll
from portal.delivery.deployments import announce_rollbacks
from portal.delivery.rollbacks import offers_for_apps, preview_url
from portal.delivery.upgrades import behind
from portal.kernel.catalog.models import ArgoCDInstance, Cluster, Environment, Service
from portal.notifications.delivery_events import emit_delivery_events
from portal.notifications.events import EventKind
from portal.notifications.models import Episode
from portal.notifications.statechanges import emit_gitops_events
from portal.releases.tasks import poll_registry

pytest.register_assert_rewrite("tests.fakes.oci_registry")

from tests.fakes.forges.harness import serving  # noqa: E402
from tests.fakes.oci_registry import BASE_TIME, Registry, push_image  # noqa: E402

pytest_plugins = ["tests.fakes.oci_registry"]
pytestmark = pytest.mark.django_db

TOKEN_ENV = "PORTAL_TEST_HUB_DELIVERY_TOKEN"
REPOSITORY = "acme/hub-checkout"
PATH = "apps/checkout/overlays/prod-sa-1"
DESTINATION = "https://prod-sa-1.k8s.acme-shop.internal:6443"


def hub_application(repo_url: str, image: str, version: str, *, health: str = "Healthy", message: str = "") -> dict:
    """The hub's Application for prod-sa-1 as Argo CD's controller writes it: the destination by
    server, the running image in status.summary.images (no workload is read there)."""
    return {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": "checkout-prod-sa-1", "namespace": "argocd", "uid": "uid-checkout-prod-sa-1",
                     "resourceVersion": "1"},
        "spec": {"project": "regions",
                 "source": {"repoURL": repo_url, "path": PATH, "targetRevision": "main"},
                 "destination": {"server": DESTINATION, "namespace": "checkout"},
                 "syncPolicy": {"automated": {"prune": True, "selfHeal": True}}},
        "status": {
            "sync": {"status": "Synced", "revision": "d" * 40,
                     "comparedTo": {"source": {"repoURL": repo_url, "path": PATH, "targetRevision": "main"},
                                    "destination": {"server": DESTINATION, "namespace": "checkout"}}},
            "health": {"status": health, **({"message": message} if message else {})},
            "summary": {"images": [f"{image}:{version}"]},
            "resources": [{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "checkout",
                           "name": "checkout", "status": "Synced",
                           "health": {"status": health, **({"message": message} if message else {})}}],
        },
    }


@pytest.fixture
def github(monkeypatch, open_registry: Registry):
    image = open_registry.image(REPOSITORY)
    files = {f"{PATH}/kustomization.yaml": (
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../../base\n"
        f"images:\n  - name: {image}\n    newTag: 1.7.0 # checkout\n")}
    with serving("github", monkeypatch, files) as harness:
        yield harness


@pytest.fixture
def hub(db, kube_emulator, monkeypatch, open_registry: Registry, github):
    monkeypatch.setattr(settings, "PORTAL_REGISTRY_PLAIN_HTTP", [open_registry.host])
    monkeypatch.setattr(settings, "PORTAL_REGISTRY_AUTH", "")
    monkeypatch.setenv(TOKEN_ENV, kube_emulator.token)
    image = open_registry.image(REPOSITORY)
    for spec in kinds.KINDS:
        kube_emulator.install(spec.api_version(spec.versions[0]), spec.plural, spec.kind)
    prod = Environment.objects.create(name="prod", order=3, production=True)
    mgmt = Environment.objects.create(name="mgmt", order=9)
    hub = Cluster.objects.create(name="mgmt-hub", environment=mgmt, connection=Cluster.Connection.API,
                                 api_url=kube_emulator.url, token_env=TOKEN_ENV)
    ArgoCDInstance.objects.create(name="mgmt-hub", cluster=hub, ui_url="https://argocd.mgmt.example")
    Cluster.objects.create(name="prod-sa-1", environment=prod, connection=Cluster.Connection.NONE,
                           api_url=DESTINATION)
    Service.objects.create(name="checkout", image_repository=image)
    return {"cluster": hub, "image": image, "repo": github.repository}


def serve_app(kube_emulator, hub: dict, version: str, **status) -> None:
    kube_emulator.add(copy.deepcopy(hub_application(hub["repo"], hub["image"], version, **status)))


def poll_hub(at) -> None:
    report = poll(Cluster.objects.select_related("environment").get(name="mgmt-hub"), at=at)
    assert report.ok, report.error


def test_a_hub_app_degraded_after_a_version_change_is_offered_a_rollback(eager_celery, hub, kube_emulator, client,
                                                                         users):
    now = timezone.now()
    serve_app(kube_emulator, hub, "1.6.0")
    poll_hub(now - timedelta(hours=2))
    serve_app(kube_emulator, hub, "1.7.0")
    poll_hub(now - timedelta(hours=1))
    app = GitOpsApp.objects.select_related("cluster__environment").get(name="checkout-prod-sa-1")
    # Filed under the unread destination, its version as Argo CD reports it; the change recorded there.
    assert (app.cluster.name, app.read_from.name) == ("prod-sa-1", "mgmt-hub")
    assert app.running == {"checkout": ["1.7.0"]}
    assert list(RunningVersion.objects.filter(app=app).values_list("workload", "version")) == [(None, "1.7.0")]
    change = VersionChange.objects.get(app=app)
    assert (change.cluster.name, change.environment.name, change.from_version, change.to_version) == (
        "prod-sa-1", "prod", "1.6.0", "1.7.0")

    serve_app(kube_emulator, hub, "1.7.0", health="Degraded",
              message="Deployment checkout exceeded its progress deadline")
    poll_hub(now - timedelta(minutes=30))
    app.refresh_from_db()
    assert app.health_status == "Degraded"
    [offer] = offers_for_apps([GitOpsApp.objects.select_related("cluster__environment").get(pk=app.pk)], now)[app.pk]
    assert (offer.cluster, offer.environment, offer.current, offer.previous) == ("prod-sa-1", "prod", "1.7.0", "1.6.0")

    client.force_login(users["member"])
    assert "Rollback PR → 1.6.0" in client.get(reverse("service", args=["checkout"])).content.decode()
    assert "Rollback PR → 1.6.0" in client.get(reverse("gitops")).content.decode()
    preview = client.get(preview_url(offer))
    html = preview.content.decode()
    assert preview.status_code == 200, html[:2000]
    assert "Roll back checkout to 1.6.0 in prod" in html
    assert "exceeded its progress deadline" in html
    assert "newTag: 1.6.0 # checkout" in html  # the diff, read from the fake's repository

    # Announced, naming the destination and its environment, never the hub: the degraded app…
    opened = emit_gitops_events()
    degraded = next(e.event for e in opened if e.app_id == app.pk)
    assert (degraded.cluster, degraded.environment) == ("prod-sa-1", "prod")
    assert "https://argocd.mgmt.example/applications/argocd/checkout-prod-sa-1" in {
        link.url for link in degraded.links}
    # …and the rollback offer, once.
    assert announce_rollbacks(now) == 1
    assert emit_delivery_events(now) == 1
    event = Episode.objects.get(kind=EventKind.ROLLBACK_OFFERED).event
    assert (event.cluster, event.environment) == ("prod-sa-1", "prod")
    assert "mgmt-hub" not in event.title and "on prod-sa-1" in event.title


def test_a_hub_app_behind_upstream_gets_an_upgrade_pr_preview(eager_celery, hub, kube_emulator, client, users,
                                                              open_registry):
    push_image(open_registry.url, REPOSITORY, "1.7.0", BASE_TIME)
    serve_app(kube_emulator, hub, "1.7.0")
    poll_hub(timezone.now())
    checkout = Service.objects.get(name="checkout")
    assert poll_registry.apply(args=[checkout.pk]).get()["ok"]
    app = GitOpsApp.objects.get(name="checkout-prod-sa-1")
    assert not [b for b in behind(service=checkout) if b.app.pk == app.pk]

    push_image(open_registry.url, REPOSITORY, "1.8.0", BASE_TIME + timedelta(days=2))
    assert poll_registry.apply(args=[checkout.pk]).get()["new_tags"] == 1
    [line] = [b for b in behind(service=checkout) if b.app.pk == app.pk]
    assert (line.running, line.target, line.app.cluster.name) == ("1.7.0", "1.8.0", "prod-sa-1")

    client.force_login(users["member"])
    updates = client.get(reverse("updates")).content.decode()
    assert "1.8.0" in updates and "prod-sa-1" in updates
    preview = client.get(reverse("pr-preview"), {"kind": "upgrade", "service": "checkout", "app": app.pk,
                                                 "to": "1.8.0"})
    html = preview.content.decode()
    assert preview.status_code == 200, html[:2000]
    assert "newTag: 1.8.0 # checkout" in html
    assert "prod-sa-1" in html and "prod" in html
