"""Upgrades of services that run on Nomad, Docker Compose and ECS, where no GitOps tool deploys
them: the change goes where the workload's portal.git.* labels say, and the preview — through
the real forge clients against each forge's fake — changes exactly the pinned tag, every other
byte of the HCL job file, the compose.yaml and the ECS task-definition JSON as it was."""

from __future__ import annotations

import html

import pytest

from gitops.models import RunningVersion, Workload
from gitops.platforms import COMPOSE_SERVICE, ECS_SERVICE, NOMAD_JOB
from portal.delivery.change_builders import ChangeError, change_for_workload
from portal.delivery.change_previews import open_change, preview_change
from portal.delivery.planner import ROLLBACK, UPGRADE
from portal.kernel.catalog.models import Cluster, Environment, Service
from tests.fakes.forges.harness import KINDS, serving

pytestmark = pytest.mark.django_db

VAULT_JOB = '''job "vault" {
  datacenters = ["dc1"]
  type        = "service"

  group "vault" {
    count = 3

    task "server" {
      driver = "docker"

      config {
        image = "hashicorp/vault:1.17.2" # pinned by hand, bumped by the portal
        ports = ["api"]
      }
    }
  }
}
'''
COMPOSE = '''services:
  checkout:
    image: ghcr.io/acme/checkout:2.4.1
    labels:
      portal.git.repo: "https://github.com/acme/gitops"
      portal.git.path: "hosts/edge-1/compose.yaml"
    restart: unless-stopped
  redis:
    image: redis:7.2
'''
TASK_DEFINITION = '''{
  "family": "search",
  "containerDefinitions": [
    {
      "name": "api",
      "image": "ghcr.io/acme/search:5.0.0",
      "memory": 256,
      "essential": true
    },
    {
      "name": "envoy",
      "image": "envoyproxy/envoy:v1.31.2",
      "memory": 128
    }
  ]
}
'''
FILES = {
    "jobs/vault.nomad.hcl": VAULT_JOB,
    "hosts/edge-1/compose.yaml": COMPOSE,
    "ecs/search-task.json": TASK_DEFINITION,
    "README.md": "acme/gitops\n",
}
CASES = [
    # (service, image, kind, git path, from, to, edited file, line, before, after)
    ("vault", "hashicorp/vault", NOMAD_JOB, "jobs/vault.nomad.hcl", "1.17.2", "1.18.0", "jobs/vault.nomad.hcl", 12,
     '        image = "hashicorp/vault:1.17.2" # pinned by hand, bumped by the portal',
     '        image = "hashicorp/vault:1.18.0" # pinned by hand, bumped by the portal'),
    ("checkout", "ghcr.io/acme/checkout", COMPOSE_SERVICE, "hosts/edge-1/compose.yaml", "2.4.1", "2.5.0",
     "hosts/edge-1/compose.yaml", 3, "    image: ghcr.io/acme/checkout:2.4.1",
     "    image: ghcr.io/acme/checkout:2.5.0"),
    ("search", "ghcr.io/acme/search", ECS_SERVICE, "ecs", "5.0.0", "5.1.0", "ecs/search-task.json", 6,
     '      "image": "ghcr.io/acme/search:5.0.0",', '      "image": "ghcr.io/acme/search:5.1.0",'),
]


def platform_workload(repository: str, service: Service, kind: str, path: str, version: str,
                      *, branch: str = "") -> Workload:
    prod = Environment.objects.get_or_create(name="prod", defaults={"order": 3, "production": True})[0]
    cluster = Cluster.objects.get_or_create(name=f"{kind.lower()}-eu", defaults={
        "environment": prod, "connection": Cluster.Connection.NOMAD})[0]
    workload = Workload.objects.create(cluster=cluster, kind=kind, namespace="default", name=service.name,
                                       git_repo=repository, git_path=path, git_branch=branch,
                                       containers=[{"container": service.name, "image": f"x:{version}"}])
    RunningVersion.objects.create(cluster=cluster, workload=workload, service=service, container=service.name,
                                  image=f"{service.image_repository}:{version}", version=version)
    return workload


@pytest.mark.parametrize("forge_kind", KINDS)
@pytest.mark.parametrize("case", CASES, ids=[c[2] for c in CASES])
def test_the_preview_changes_only_the_pinned_tag(forge_kind, case, monkeypatch):
    name, image, kind, path, from_version, to_version, edited, line, before, after = case
    with serving(forge_kind, monkeypatch, FILES) as forge:
        service = Service.objects.create(name=name, image_repository=image)
        workload = platform_workload(forge.repository, service, kind, path, from_version)
        change = change_for_workload(UPGRADE, workload, service, to_version)
        assert (change.from_version, change.path, change.apps) == (from_version, path, ())
        shown = preview_change(change, forge=forge.forge)
    assert shown.error == "" and shown.can_open, (shown.error, shown.problems)
    (edit,) = shown.preview.edits
    assert edit.path == edited
    assert [(e.line, e.before, e.after) for e in edit.lines] == [(line, before, after)]
    assert edit.after == FILES[edited].replace(before, after, 1)  # every other byte as it was


def test_opening_it_makes_one_pull_request_on_the_labelled_branch(monkeypatch, users):
    with serving("github", monkeypatch, FILES) as forge:
        forge.model.branches["release"] = forge.model.branches["main"]
        service = Service.objects.create(name="vault", image_repository="hashicorp/vault")
        workload = platform_workload(forge.repository, service, NOMAD_JOB, "jobs/vault.nomad.hcl", "1.17.2",
                                     branch="release")
        result = open_change(change_for_workload(UPGRADE, workload, service, "1.18.0"), users["member"],
                             forge=forge.forge)
        assert result.ok, result.message
        (pull,) = forge.model.pulls
        assert pull.base == "release"
        assert 'image = "hashicorp/vault:1.18.0"' in forge.model.files_at(pull.head)["jobs/vault.nomad.hcl"]


def test_without_labels_or_for_a_rollback_the_reason_is_said(monkeypatch):
    service = Service.objects.create(name="vault", image_repository="hashicorp/vault")
    unlabelled = platform_workload("", service, NOMAD_JOB, "", "1.17.2")
    with pytest.raises(ChangeError, match="add the portal.git.repo and portal.git.path labels"):
        change_for_workload(UPGRADE, unlabelled, service, "1.18.0")
    with pytest.raises(ChangeError, match="no rollback offer"):
        change_for_workload(ROLLBACK, unlabelled, service, "1.16.0")


def test_the_service_page_offers_the_upgrade_where_git_pins_it_and_the_lines_where_nothing_does(eager_celery,
    client, users, monkeypatch
):
    from django.urls import reverse
    from django.utils import timezone

    from portal.releases.models import Release

    with serving("github", monkeypatch, FILES) as forge:
        vault = Service.objects.create(name="vault", image_repository="hashicorp/vault")
        for tag in ("1.17.2", "1.18.0"):
            Release.objects.create(service=vault, tag=tag, version=tag, seen_at=timezone.now())
        labelled = platform_workload(forge.repository, vault, NOMAD_JOB, "jobs/vault.nomad.hcl", "1.17.2")
        unlabelled = Workload.objects.create(cluster=labelled.cluster, kind=COMPOSE_SERVICE, namespace="edge",
                                             name="vault-edge")
        RunningVersion.objects.create(cluster=labelled.cluster, workload=unlabelled, service=vault,
                                      container="vault", image="hashicorp/vault:1.17.2", version="1.17.2")
        client.force_login(users["member"])
        page = client.get(reverse("service", args=["vault"])).content.decode()
        row = page[page.index('data-outside="vault"'):]
        row = row[: row.index("</tr>")]
        assert "jobs/vault.nomad.hcl" in row and "Open PR → 1.18.0" in row
        edge = page[page.index('data-outside="vault-edge"'):]
        assert "Not known: add these lines" in edge[: edge.index("</tr>")]
        assert "portal.git.repo:" in edge[: edge.index("</tr>")]
        link = row[row.index('href="/pr/preview') + 6:]
        link = link[: link.index('"')].replace("&amp;", "&")
        preview = html.unescape(client.get(link).content.decode())
    assert '+        image = "hashicorp/vault:1.18.0"' in preview and "jobs/vault.nomad.hcl" in preview
    client.force_login(users["viewer"])
    assert "Open PR" not in client.get(reverse("service", args=["vault"])).content.decode()
