"""End to end, through real boundaries: a new tag pushed to a real registry (tests/fakes/oci_registry.py),
the cluster read over HTTP from the Kubernetes API emulator (URL + token), the pull request
previewed, opened and merged on the GitHub fake, and the version running in the cluster:
running_at, lead times and medians on the Delivery page."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from gitops import kinds
from gitops.models import GitOpsApp, VersionChange
from gitops.polling import poll
from portal.delivery.deployments import track
from portal.delivery.models import PullRequest
from portal.delivery.tracking import refresh_open
from portal.delivery.upgrades import behind
from portal.kernel.catalog.fleetfile import load_fleet
from portal.kernel.catalog.models import Cluster, Service
from portal.releases.models import Release
from portal.releases.tasks import poll_registry

pytest.register_assert_rewrite("tests.fakes.oci_registry")

from tests.fakes.forges.harness import serving  # noqa: E402
from tests.fakes.oci_registry import BASE_TIME, Registry, push_image  # noqa: E402

pytest_plugins = ["tests.fakes.oci_registry"]
# Opening through the page queues a job; here it runs in the request (these tests are not about the job).
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery")]

ROOT = Path(__file__).resolve().parents[2]
TOKEN_ENV = "PORTAL_TEST_KUBE_TOKEN"
REPOSITORY = "acme/e2e-checkout"
PATH = "apps/checkout/overlays/prod"
NEW_COMMIT = "9c3e1f0a2b4d6e8f0a1b2c3d4e5f60718293a4b5"


def demo_objects(cluster: str) -> list[dict]:
    objects = []
    for path in sorted((ROOT / "examples" / "clusters" / cluster).rglob("*.yaml")):
        objects.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    return objects


def find(objects: list[dict], kind: str, name: str) -> dict:
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)


@pytest.fixture
def github(monkeypatch, open_registry: Registry):
    image = open_registry.image(REPOSITORY)
    files = {
        f"{PATH}/kustomization.yaml": (
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../../base\n"
            f"images:\n  - name: {image}\n    newTag: 3.3.1 # checkout\n"
        ),
    }
    with serving("github", monkeypatch, files) as harness:
        yield harness


@pytest.fixture
def world(db, kube_emulator, monkeypatch, open_registry: Registry, github):
    """prod-eu-1 of the demo fleet on the emulator, its checkout app following the fake's repository
    and running the registry's image at 3.3.1."""
    monkeypatch.setattr(settings, "PORTAL_REGISTRY_PLAIN_HTTP", [open_registry.host])
    monkeypatch.setattr(settings, "PORTAL_REGISTRY_AUTH", "")
    load_fleet(ROOT / "examples" / "fleet.yaml")
    image = open_registry.image(REPOSITORY)
    Service.objects.filter(name="checkout").update(image_repository=image, image_aliases=[])
    push_image(open_registry.url, REPOSITORY, "3.3.1", BASE_TIME)

    objects = demo_objects("prod-eu-1")
    app = find(objects, "Application", "checkout-prod")
    app["spec"]["source"]["repoURL"] = github.repository
    app["spec"]["source"]["path"] = PATH
    app["status"]["sync"]["comparedTo"]["source"].update(repoURL=github.repository, path=PATH)
    app["status"]["summary"]["images"] = [f"{image}:3.3.1"]
    deployment = find(objects, "Deployment", "checkout")
    deployment["spec"]["template"]["spec"]["containers"][0]["image"] = f"{image}:3.3.1"
    monkeypatch.setenv(TOKEN_ENV, kube_emulator.token)
    kube_emulator.add_all(objects)
    for spec in kinds.KINDS:
        kube_emulator.install(spec.api_version(spec.versions[0]), spec.plural, spec.kind)
    Cluster.objects.filter(name="prod-eu-1").update(
        connection=Cluster.Connection.API, api_url=kube_emulator.url, token_env=TOKEN_ENV
    )
    return {"app": app, "deployment": deployment, "image": image,
            "cluster": Cluster.objects.select_related("environment").get(name="prod-eu-1")}


def test_new_tag_to_running_in_production_with_lead_times(client, users, world, github, kube_emulator,
                                                            open_registry):
    cluster, image = world["cluster"], world["image"]
    checkout = Service.objects.get(name="checkout")
    start = timezone.now()

    # The cluster runs 3.3.1; the registry has only 3.3.1: nothing to do.
    assert poll(cluster, at=start).ok
    app = GitOpsApp.objects.get(cluster=cluster, name="checkout-prod")
    assert app.running == {"checkout": ["3.3.1"]} and app.repo_url == github.repository
    assert poll_registry.apply(args=[checkout.pk]).get()["ok"]
    assert not [b for b in behind(service=checkout) if b.app.pk == app.pk]

    # A new tag appears upstream; the registry poll task sees it and the service is behind.
    push_image(open_registry.url, REPOSITORY, "3.4.0", BASE_TIME + timedelta(days=2))
    assert poll_registry.apply(args=[checkout.pk]).get()["new_tags"] == 1
    assert Release.objects.filter(service=checkout, tag="3.4.0").exists()
    [line] = [b for b in behind(service=checkout) if b.app.pk == app.pk]
    assert (line.running, line.target) == ("3.3.1", "3.4.0")
    client.force_login(users["member"])
    assert "3.4.0" in client.get(reverse("updates")).content.decode()

    # Preview (reads the fake's files), then open.
    preview = client.get(reverse("pr-preview"), {"kind": "upgrade", "service": "checkout", "app": app.pk,
                                                 "to": "3.4.0"})
    assert preview.status_code == 200
    assert "newTag: 3.4.0 # checkout" in preview.content.decode()
    opened = client.post(reverse("pr-open"), {"kind": "upgrade", "mode": "grouped",
                                              "item": f"{app.pk}:checkout:3.4.0"})
    assert opened.status_code == 302
    pr = PullRequest.objects.get(services=["checkout"], to_version="3.4.0")
    assert pr.state == PullRequest.State.OPEN and pr.opened_by == users["member"] and pr.number
    [pull] = github.model.open_pulls()
    assert pull.number == pr.number

    # Merged on the forge; the forge tracking task reads it.
    merged_at = pr.opened_at.replace(microsecond=0) + timedelta(minutes=10, seconds=1)
    pull.state, pull.merged_at, pull.closed_at = "closed", merged_at, merged_at
    github.model.branches["main"] = github.model.branches[pull.head]
    report = refresh_open(forge_for=lambda repository: github.new_forge(), now=merged_at + timedelta(minutes=1))
    assert report.merged == 1
    pr.refresh_from_db()
    assert pr.state == PullRequest.State.MERGED and pr.merged_at == merged_at

    # Five minutes later Argo CD has not synced the merge yet: not deployed, and why.
    track(merged_at + timedelta(minutes=5))
    pr.refresh_from_db()
    assert pr.running_at is None
    page = client.get(reverse("delivery"))
    [row] = [r for r in page.context["rows"] if r.pr.pk == pr.pk]
    assert row.status == "not deployed"
    assert "Argo CD has not synced checkout-prod since the merge" in row.progress.why

    # Argo CD syncs the merge commit and the Deployment rolls to 3.4.0; the next poll sees it.
    running_from = merged_at + timedelta(minutes=15)
    application, deployment = world["app"], world["deployment"]
    application["status"]["sync"]["revision"] = NEW_COMMIT
    application["status"]["summary"]["images"] = [f"{image}:3.4.0"]
    deployment["spec"]["template"]["spec"]["containers"][0]["image"] = f"{image}:3.4.0"
    kube_emulator.add(application)
    kube_emulator.add(deployment)
    assert poll(cluster, at=running_from).ok
    change = VersionChange.objects.get(cluster=cluster, service=checkout)
    assert (change.from_version, change.to_version, change.at) == ("3.3.1", "3.4.0", running_from)

    report = track(merged_at + timedelta(minutes=20))
    assert report.running == 1
    pr.refresh_from_db()
    assert pr.running_at == running_from

    # The Delivery page: running, 25 min after opening and 15 min after merging; the medians.
    page = client.get(reverse("delivery"))
    html = page.content.decode()
    [row] = [r for r in page.context["rows"] if r.pr.pk == pr.pk]
    assert row.status == "running"
    assert (row.after_opening, row.after_merge) == ("25 min", "15 min")
    assert page.context["median_proposal"] == "25 min" and page.context["median_merge"] == "15 min"
    assert "25 min after opening · 15 min after merge" in html
    assert page.context["medians"].count == 1
