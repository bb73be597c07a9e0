"""Service discovery over a polled fleet: unclaimed images grouped by repository, where
they run, suggested names and teams, ignoring, and bulk adds that claim the right apps."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.contrib.auth import get_user_model
from django.core.management import call_command

from gitops.discovery import NewService, add_services, ignore_images, unclaimed_images, unignore_images
from gitops.models import GitOpsApp
from gitops.polling import poll
from portal.kernel.audit.models import AuditLog
from portal.kernel.catalog.fleetfile import load_fleet
from portal.kernel.catalog.models import Cluster, Environment, Service

pytestmark = pytest.mark.django_db


def application(name: str, *, project: str = "default", labels: dict[str, str] | None = None,
                deploys: list[tuple[str, str]] = (), images: list[str] = ()) -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": name, "namespace": "argocd", "labels": labels or {}},
        "spec": {"project": project, "source": {"repoURL": "https://github.com/acme/deploy.git",
                                                "path": f"apps/{name}", "targetRevision": "main"},
                 "destination": {"server": "https://kubernetes.default.svc", "namespace": name}},
        "status": {"sync": {"status": "Synced", "revision": "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"},
                   "health": {"status": "Healthy"},
                   "resources": [{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": ns,
                                  "name": dep, "status": "Synced"} for ns, dep in deploys],
                   "summary": {"images": list(images)}},
    }


def deployment(namespace: str, name: str, *images: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "generation": 1},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [
            {"name": f"c{i}", "image": image} for i, image in enumerate(images)]}}},
        "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1,
                   "readyReplicas": 1},
    }


def write(folder: Path, objects: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True)
    (folder / "objects.yaml").write_text(yaml.safe_dump_all(objects))
    return folder


@pytest.fixture
def fleet(tmp_path):
    prod = Environment.objects.create(name="prod", order=3, production=True)
    staging = Environment.objects.create(name="staging", order=2)
    Service.objects.create(name="checkout", image_repository="ghcr.io/acme/checkout")
    prod_objects = [
        application("billing-prod", project="finance", deploys=[("billing", "billing-api")]),
        deployment("billing", "billing-api", "ghcr.io/acme/billing-api:2.1.0"),
        # One app, a service and its sidecar: the name label names the app, not each image.
        application("shop-prod", labels={"app.kubernetes.io/name": "storefront"}, deploys=[("shop", "web")]),
        deployment("shop", "web", "ghcr.io/acme/web:1.0.0", "docker.io/envoyproxy/envoy:v1.30.1"),
        application("catalog-prod", labels={"app.kubernetes.io/name": "catalog-api"},
                    deploys=[("catalog", "cat")]),
        deployment("catalog", "cat", "ghcr.io/acme/cat:3.0.0"),
        application("checkout-prod", deploys=[("checkout", "checkout")]),
        deployment("checkout", "checkout", "ghcr.io/acme/checkout:5.0.0"),
        deployment("kube-system", "coredns", "registry.k8s.io/coredns/coredns:v1.11.1"),  # no app deploys it
    ]
    staging_objects = [
        application("billing-staging", project="finance", labels={"app.kubernetes.io/part-of": "payments-team"},
                    deploys=[("billing", "billing-api")]),
        deployment("billing", "billing-api", "ghcr.io/acme/billing-api:2.2.0-rc.1"),
        # A destination the portal does not read: what runs is only in summary.images.
        application("ledger-staging", project="finance", images=["ghcr.io/acme/ledger:0.9.0"]),
    ]
    clusters = []
    for name, env, objects in (("prod-eu-1", prod, prod_objects), ("staging-eu-1", staging, staging_objects)):
        folder = write(tmp_path / name, objects)
        cluster = Cluster.objects.create(name=name, environment=env, connection=Cluster.Connection.MANIFESTS,
                                         manifests_path=str(folder))
        report = poll(cluster)
        assert report.ok, report.error
        clusters.append(cluster)
    return clusters


@pytest.fixture
def admin(db):
    return get_user_model().objects.create_user("ada", password="pw")


def by_repo() -> dict[str, Any]:
    return {u.repository: u for u in unclaimed_images()}


def test_unclaimed_images_grouped_by_repository_with_where_they_run(fleet, django_assert_max_num_queries):
    with django_assert_max_num_queries(5):
        found = unclaimed_images()

    repos = [u.repository for u in found]
    assert "ghcr.io/acme/checkout" not in repos  # claimed by a service
    billing = next(u for u in found if u.repository == "ghcr.io/acme/billing-api")
    assert repos[0] == "ghcr.io/acme/billing-api", "busiest first"
    assert (billing.app_count, billing.cluster_count) == (2, 2)
    assert billing.versions == ["2.1.0", "2.2.0-rc.1"]
    assert [str(a) for a in billing.apps] == ["prod-eu-1/argocd/billing-prod", "staging-eu-1/argocd/billing-staging"]
    assert set(repos) == {"ghcr.io/acme/billing-api", "ghcr.io/acme/web", "docker.io/envoyproxy/envoy",
                          "ghcr.io/acme/cat", "ghcr.io/acme/ledger", "registry.k8s.io/coredns/coredns"}
    coredns = next(u for u in found if u.repository == "registry.k8s.io/coredns/coredns")
    assert (coredns.app_count, coredns.clusters) == (0, ["prod-eu-1"])
    ledger = next(u for u in found if u.repository == "ghcr.io/acme/ledger")
    assert [a.name for a in ledger.apps] == ["ledger-staging"] and ledger.versions == ["0.9.0"]


def test_suggested_names_and_teams_from_labels_project_and_image(fleet):
    found = by_repo()
    # part-of label beats the Argo CD project; no name label: the image's last segment.
    assert (found["ghcr.io/acme/billing-api"].suggested_name, found["ghcr.io/acme/billing-api"].suggested_team) == (
        "billing-api", "payments-team")
    # The app's name label names this image alone.
    assert found["ghcr.io/acme/cat"].suggested_name == "catalog-api"
    # A label two images share names neither of them.
    assert found["ghcr.io/acme/web"].suggested_name == "web"
    assert found["docker.io/envoyproxy/envoy"].suggested_name == "envoy"
    # Project `default` is no team.
    assert found["ghcr.io/acme/web"].suggested_team == ""
    assert found["ghcr.io/acme/ledger"].suggested_team == "finance"


def test_ignored_images_stay_ignored_until_listed_again(fleet, admin):
    assert ignore_images(["registry.k8s.io/coredns/coredns:v1.11.1", "docker.io/envoyproxy/envoy"], admin) == [
        "docker.io/envoyproxy/envoy", "registry.k8s.io/coredns/coredns"]
    assert ignore_images(["docker.io/envoyproxy/envoy"], admin) == []  # already ignored: no second audit row

    poll(Cluster.objects.get(name="prod-eu-1"))  # a new poll sees them running again
    assert "registry.k8s.io/coredns/coredns" not in by_repo()
    assert "docker.io/envoyproxy/envoy" not in by_repo()
    ignored = {u.repository: u.ignored for u in unclaimed_images(include_ignored=True)}
    assert ignored["docker.io/envoyproxy/envoy"] is True and ignored["ghcr.io/acme/web"] is False
    assert AuditLog.objects.filter(action="image.ignored").count() == 2

    assert unignore_images(["docker.io/envoyproxy/envoy"], admin) == ["docker.io/envoyproxy/envoy"]
    assert "docker.io/envoyproxy/envoy" in by_repo()


def test_bulk_add_claims_the_apps_that_run_each_image_now_and_after_the_next_poll(fleet, admin):
    added = add_services([NewService("ghcr.io/acme/billing-api", "billing", "payments-team"),
                          NewService("ghcr.io/acme/ledger", "ledger", "finance")], admin)

    assert not added.errors
    assert {s.name: s.image_repository for s in added.services} == {
        "billing": "ghcr.io/acme/billing-api", "ledger": "ghcr.io/acme/ledger"}
    claimed = {a.name: sorted(a.services.values_list("name", flat=True)) for a in GitOpsApp.objects.all()}
    assert claimed["billing-prod"] == ["billing"] and claimed["billing-staging"] == ["billing"]
    assert claimed["ledger-staging"] == ["ledger"]
    assert claimed["shop-prod"] == [] and claimed["checkout-prod"] == ["checkout"]
    assert "ghcr.io/acme/billing-api" not in by_repo()
    audit = AuditLog.objects.get(action="service.added_from_discovery", target="billing")
    assert audit.details["apps"] == ["prod-eu-1/argocd/billing-prod", "staging-eu-1/argocd/billing-staging"]

    for cluster in fleet:  # the poll's own matching keeps exactly those claims
        assert poll(cluster).ok
    after = {a.name: sorted(a.services.values_list("name", flat=True)) for a in GitOpsApp.objects.all()}
    assert after == claimed
    billing_prod = GitOpsApp.objects.get(name="billing-prod")
    assert billing_prod.running == {"billing": ["2.1.0"]}


def test_bulk_add_is_all_or_nothing(fleet, admin):
    added = add_services([NewService("ghcr.io/acme/web", "web"),
                          NewService("ghcr.io/acme/cat", "checkout"),  # taken
                          NewService("ghcr.io/acme/nowhere", "nowhere"),  # not running
                          NewService("docker.io/envoyproxy/envoy", "Envoy Proxy")], admin)  # not a slug

    assert len(added.errors) == 3 and not added.services
    assert any("'checkout'" in e and "exists" in e for e in added.errors)
    assert any("ghcr.io/acme/nowhere" in e for e in added.errors)
    assert any("'Envoy Proxy'" in e for e in added.errors)
    assert not Service.objects.filter(name="web").exists()
    assert not AuditLog.objects.filter(action="service.added_from_discovery").exists()


# ----------------------------------------------------------------------------- the command


def test_command_lists_unclaimed_images_with_suggestions(fleet):
    out = StringIO()
    call_command("discover_services", stdout=out)
    text = out.getvalue()
    lines = text.splitlines()
    billing = next(line for line in lines if line.startswith("ghcr.io/acme/billing-api"))
    assert billing.split() == ["ghcr.io/acme/billing-api", "2", "2", "billing-api", "payments-team",
                               "2.1.0,2.2.0-rc.1"]
    assert "prod-eu-1/argocd/billing-prod" in text  # which apps it would claim
    assert "ghcr.io/acme/checkout" not in text
    assert "6 unclaimed images" in text


def test_command_json_and_fleet_output_load_back_as_services(fleet, tmp_path):
    out = StringIO()
    call_command("discover_services", "--format", "json", stdout=out)
    rows = {r["repository"]: r for r in json.loads(out.getvalue())}
    assert rows["ghcr.io/acme/billing-api"]["apps"] == ["prod-eu-1/argocd/billing-prod",
                                                       "staging-eu-1/argocd/billing-staging"]

    out = StringIO()
    call_command("discover_services", "--format", "fleet", stdout=out)
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text(out.getvalue())
    loaded = load_fleet(fleet_file)

    assert loaded.services == 6
    billing = Service.objects.get(name="billing-api")
    assert (billing.image_repository, billing.team) == ("ghcr.io/acme/billing-api", "payments-team")
    assert by_repo() == {}
