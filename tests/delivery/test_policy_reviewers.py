"""A version policy's reviewers (people and @org/team) and labels reach the pull request opened
for its service, on each forge's fake over real HTTP: GitHub and Gitea record teams as
`team_reviewers`; GitLab takes people only (a group is reported as skipped, never dropped
silently). Both ways a PR opens: automatically (the policy's auto_pr) and by a person."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.urls import reverse
from django.utils import timezone

from portal.delivery import policy_editing
from portal.delivery.automatic import run
from portal.delivery.change_builders import change_for_upgrade
from portal.delivery.change_previews import open_change
from portal.delivery.models import PullRequest
from portal.delivery.upgrades import behind
from portal.kernel.audit.models import AuditLog
from portal.releases.models import Release
from tests.fakes.forges.harness import KINDS, serving
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db
PROD = "apps/checkout/overlays/prod"


@pytest.fixture(params=KINDS)
def forge(request, monkeypatch):
    with serving(request.param, monkeypatch) as harness:
        yield harness


@pytest.fixture
def setup(catalog, forge):
    now = timezone.now()
    for tag in ("1.6.0", "1.7.0", "2.0.0"):
        Release.objects.create(service=catalog.checkout, tag=tag, version=tag, seen_at=now)
    policy = policy_editing.check({"range": ">=1.6 <2", "auto_pr": {"dev": "minor"},
                             "pr_reviewers": ["alice", "@acme/platform"], "pr_labels": ["dependencies", "portal"]})
    policy_editing.save(catalog.checkout, policy, None, via="test")
    dev = seed_app(catalog.dev_cluster, "checkout-dev", service=catalog.checkout, version="1.6.0",
                   repo_url=forge.repository, path=PROD)
    staging = seed_app(catalog.staging_cluster, "checkout-staging", service=catalog.checkout, version="1.6.0",
                       repo_url=forge.repository, path=PROD)
    return {"dev": dev, "staging": staging}


def _assert_reviewers_and_labels(forge, pull, skipped_text: str) -> None:
    assert sorted(pull.labels) == ["dependencies", "portal"]
    assert pull.reviewers == ["alice"]
    if forge.kind == "gitlab":
        assert pull.team_reviewers == [] and "@acme/platform" in skipped_text
    else:
        assert pull.team_reviewers == ["platform"]


def test_an_automatic_pr_carries_the_policys_reviewers_and_labels(setup, forge):
    report = run()
    assert len(report.opened) == 1, report
    [pull] = forge.model.pulls
    assert pull.title == "Update checkout to 1.7.0 in dev"  # the range keeps it below 2.0.0
    row = PullRequest.objects.get()
    _assert_reviewers_and_labels(forge, pull, row.last_error)
    audit = AuditLog.objects.get(action="pull_request.opened")
    assert audit.details["automatic"] is True and audit.actor_name == "system"


def test_a_pr_a_person_opens_carries_them_too(setup, forge, users):
    [line] = behind(app_ids=[setup["staging"].pk])
    assert line.target == "1.7.0"
    result = open_change(change_for_upgrade(line.app, line.service, line.target), users["member"])
    assert result.ok, result.message
    [pull] = forge.model.pulls
    _assert_reviewers_and_labels(forge, pull, "; ".join(f"{k}: {v}" for k, v in result.skipped.items()))
    audit = AuditLog.objects.get(action="pull_request.opened")
    assert audit.details["automatic"] is False and audit.actor == users["member"]


def preview_url(app_id: int) -> str:
    return reverse("pr-preview") + "?" + urlencode({"kind": "upgrade", "service": "checkout", "app": app_id,
                                                    "to": "1.7.0"})


def test_the_preview_lists_the_reviewers_and_labels_opening_will_ask_for(eager_celery, setup, forge, client, users):
    client.force_login(users["viewer"])
    response = client.get(preview_url(setup["staging"].pk))
    assert response.status_code == 200
    html = response.content.decode()
    reviewers = html.split('class="reviewers">', 1)[1].split("</dd>", 1)[0]
    labels = html.split('class="labels">', 1)[1].split("</dd>", 1)[0]
    assert "alice" in reviewers and "@acme/platform" in reviewers and "none" not in reviewers
    assert "dependencies" in labels and "portal" in labels
    assert forge.model.pulls == []  # a preview writes nothing


def test_a_preview_without_a_policy_says_nobody_is_asked(eager_celery, catalog, forge, client, users):
    app = seed_app(catalog.staging_cluster, "checkout-staging", service=catalog.checkout, version="1.6.0",
                   repo_url=forge.repository, path=PROD)
    client.force_login(users["viewer"])
    response = client.get(preview_url(app.pk))
    assert response.status_code == 200
    html = response.content.decode()
    reviewers = html.split('class="reviewers">', 1)[1].split("</dd>", 1)[0]
    assert "none: no version policy of these services names any" in reviewers

