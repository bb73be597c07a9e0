"""Workloads no GitOps tool deploys (Nomad, Compose, ECS) on the Updates page and in automatic
pull requests: a workload behind the newest acceptable release is a line like an application's,
its Open PR previews the change where its portal.git.* labels say (through the GitHub fake), one
without labels says why instead, and the automatic PRs open, hold and record it by the same
rules (no sync window: no GitOps tool holds it)."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from gitops.models import RunningVersion, Workload
from gitops.platforms import COMPOSE_SERVICE, NOMAD_JOB
from portal.delivery.automatic import run
from portal.delivery.models import AutoPRAttempt, ChangeFreeze, PullRequest, ServicePolicy
from portal.delivery.upgrades import BehindLines
from portal.kernel.catalog.models import Environment, Service
from portal.releases.models import Release
from tests.delivery.test_platform_changes import FILES, platform_workload
from tests.fakes.forges.harness import serving

pytestmark = pytest.mark.django_db

JOB = "jobs/vault.nomad.hcl"


@pytest.fixture
def github(monkeypatch):
    with serving("github", monkeypatch, FILES) as harness:
        yield harness


@pytest.fixture
def vault(github):
    service = Service.objects.create(name="vault", image_repository="hashicorp/vault")
    for tag in ("1.17.2", "1.18.0"):
        Release.objects.create(service=service, tag=tag, version=tag, seen_at=timezone.now())
    labelled = platform_workload(github.repository, service, NOMAD_JOB, JOB, "1.17.2")
    unlabelled = Workload.objects.create(cluster=labelled.cluster, kind=COMPOSE_SERVICE, namespace="edge",
                                         name="vault-edge")
    RunningVersion.objects.create(cluster=labelled.cluster, workload=unlabelled, service=service,
                                  container="vault", image="hashicorp/vault:1.17.2", version="1.17.2")
    current = Workload.objects.create(cluster=labelled.cluster, kind=NOMAD_JOB, namespace="default",
                                      name="vault-new", git_repo=github.repository, git_path=JOB)
    RunningVersion.objects.create(cluster=labelled.cluster, workload=current, service=service,
                                  container="vault", image="hashicorp/vault:1.18.0", version="1.18.0")
    return {"service": service, "labelled": labelled, "unlabelled": unlabelled}


def row_of(page: str, name: str) -> str:
    row = page[page.index(f'data-app="{name}"'):]
    return row[: row.index("</tr>")]


def test_updates_lists_a_workload_outside_gitops_with_its_open_pr_or_why_not(eager_celery, client, users, vault):
    client.force_login(users["member"])
    page = client.get(reverse("updates")).content.decode()

    labelled = row_of(page, "vault")
    assert 'data-outside="NomadJob"' in labelled and "outside GitOps" in labelled and JOB in labelled
    assert "Open PR → 1.18.0" in labelled
    assert f'value="w{vault["labelled"].pk}:vault:1.18.0"' in labelled  # a tick names the workload
    edge = row_of(page, "vault-edge")
    assert "Open PR" not in edge and 'type="checkbox"' not in edge
    assert "No pull request: vault-edge names no Git location: add the portal.git.repo" in edge
    assert 'data-app="vault-new"' not in page  # runs the newest: not behind
    assert len(BehindLines()) == 2

    link = labelled[labelled.index('href="/pr/preview') + 6:]
    preview = html.unescape(client.get(link[: link.index('"')].replace("&amp;", "&")).content.decode())
    assert '+        image = "hashicorp/vault:1.18.0" # pinned by hand, bumped by the portal' in preview
    assert '-        image = "hashicorp/vault:1.17.2" # pinned by hand, bumped by the portal' in preview

    client.force_login(users["viewer"])
    assert "Open PR → 1.18.0" not in client.get(reverse("updates")).content.decode()


def test_the_environment_filter_and_the_order_take_workloads_like_applications(client, users, vault):
    staging = Environment.objects.create(name="staging", order=2)
    client.force_login(users["viewer"])
    page = client.get(reverse("updates"), {"environment": "prod"}).content.decode()
    assert re.findall(r'data-app="([^"]+)" data-target', page) == ["vault", "vault-edge"]
    assert 'data-app="vault' not in client.get(reverse("updates"), {"environment": staging.name}).content.decode()


def test_a_workload_in_no_environment_is_no_line(vault):
    cluster = vault["labelled"].cluster
    cluster.environment = None
    cluster.save(update_fields=["environment"])
    assert len(BehindLines()) == 0


def test_an_automatic_pr_opens_for_the_labelled_workload_once(vault, github):
    ServicePolicy.objects.create(service=vault["service"], auto_pr={"prod": "minor"})

    report = run()

    assert len(report.opened) == 1, report
    assert report.opened[0].startswith("vault 1.18.0 in vault (nomadjob-eu)")
    [pull] = github.model.pulls
    assert "**Automatic**" in pull.body
    assert 'image = "hashicorp/vault:1.18.0"' in github.model.files_at(pull.head)[JOB]
    row = PullRequest.objects.get()
    assert row.automatic and row.environment == "prod" and row.to_version == "1.18.0"
    opened = AutoPRAttempt.objects.get(workload=vault["labelled"])
    assert opened.app is None and opened.outcome == "opened"
    # Without labels: recorded as no pin (no Git location) with the reason, tried again the next
    # day, not every run.
    failed = AutoPRAttempt.objects.get(workload=vault["unlabelled"])
    assert failed.outcome == "no_pin" and "names no Git location" in failed.message
    assert failed.retry_after is not None

    again = run()
    assert again.opened == again.failed == [] and len(github.model.pulls) == 1  # the open PR proposes it
    assert AutoPRAttempt.objects.get(workload=vault["unlabelled"]).attempts == 1


def test_a_freeze_holds_a_workload_outside_gitops_too(vault, github):
    ServicePolicy.objects.create(service=vault["service"], auto_pr={"prod": "minor"})
    now = timezone.now()
    freeze = ChangeFreeze.objects.create(starts_at=now - timedelta(hours=1), ends_at=now + timedelta(hours=2),
                                         reason="release train")
    freeze.environments.add(Environment.objects.get(name="prod"))

    report = run(now=lambda: now)

    assert github.model.pulls == [] and len(report.held) == 2
    # Held is recorded (the pages say why), with no retry date: the next run looks again.
    assert set(AutoPRAttempt.objects.values_list("outcome", "retry_after", "attempts")) == {("freeze", None, 0)}
    assert all("change freeze" in line for line in report.held)


def test_a_merged_pr_for_a_workload_counts_as_deployed_when_the_workload_runs_it(vault):
    from portal.delivery.deployments import OUTSIDE_WHY, not_deployed_why, track

    now = timezone.now()
    cluster = vault["labelled"].cluster
    Workload.objects.filter(name="vault-new").delete()  # judged per cluster: none runs 1.18.0 there yet
    pr = PullRequest.objects.create(
        kind="upgrade", services=["vault"], environment="prod", clusters=[cluster.name],
        repository="https://github.com/acme/gitops", forge_kind="github", number=7,
        url="https://github.com/acme/gitops/pull/7", title="Update vault to 1.18.0 in prod",
        branch="portal/vault-1.18.0-prod", base_branch="main", state="merged", from_version="1.17.2",
        to_version="1.18.0", opened_at=now - timedelta(hours=3), merged_at=now - timedelta(hours=2))

    track(now)
    pr.refresh_from_db()
    assert pr.running_at is None
    assert not_deployed_why([pr], now)[pr.pk] == f"{cluster.name}: {OUTSIDE_WHY}"

    RunningVersion.objects.filter(workload__in=[vault["labelled"], vault["unlabelled"]]).update(version="1.18.0")
    track(now)
    pr.refresh_from_db()
    assert pr.running_at is not None


def test_delivery_offers_a_promotion_into_the_production_workloads_labelled_file(eager_celery, client, users, vault,
                                                                                 github):
    """vault 1.18.0 runs on a staging Nomad cluster, 1.17.2 in the production job: the Delivery
    page's Open PR → prod previews the change of the production job file; the unlabelled
    production workload says why it gets none."""
    from portal.kernel.catalog.models import Cluster

    staging = Environment.objects.create(name="staging", order=2)
    cluster = Cluster.objects.create(name="nomad-staging", environment=staging, connection=Cluster.Connection.NOMAD)
    job = Workload.objects.create(cluster=cluster, kind=NOMAD_JOB, namespace="default", name="vault",
                                  git_repo=github.repository, git_path="jobs/staging/vault.nomad.hcl")
    RunningVersion.objects.create(cluster=cluster, workload=job, service=vault["service"], container="vault",
                                  image="hashicorp/vault:1.18.0", version="1.18.0")
    Workload.objects.filter(name="vault-new").delete()  # production runs only the older version

    client.force_login(users["member"])
    page = client.get(reverse("delivery")).content.decode()
    row = page[page.index('<tr class="promotion" data-service="vault"'):]
    row = row[: row.index("</tr>")]
    assert "Open PR → prod" in row
    assert "No pull request: vault-edge names no Git location" in row
    link = row[row.index('href="/pr/preview') + 6:]
    link = html.unescape(link[: link.index('"')])
    assert f"item=w{vault['labelled'].pk}%3Avault%3A1.18.0%3A1.17.2" in link
    preview = html.unescape(client.get(link).content.decode())
    assert '+        image = "hashicorp/vault:1.18.0" # pinned by hand, bumped by the portal' in preview
    assert JOB in preview
