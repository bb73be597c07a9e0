"""The commit links of a GitOps application: the service page's "changes <before> → <after>" once
an app has synced a new commit (what it replaced, from the portal's own sighting or else the
tool's own `status.history`), /gitops' synced revision linked to its commit, and /gitops' pull
request column for the app's open PRs, a chart's included."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from gitops.models import GitOpsApp
from portal.delivery.models import PullRequest
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db

GIT = "https://github.com/acme-shop/gitops"
# examples/clusters/prod-eu-1/argocd/applications.yaml: payments-prod's status.history.
FIRST, SECOND = "aa90deae69507d01ce88e2c070566a3a9451fffa", "e0a377a0f4c19b12aadf8dc86983e4b204010676"
HEAD = "32418a9408aaef8491f0097bb4be7cd631a604ba"  # status.sync.revision: main's HEAD, compared and in sync


@pytest.fixture
def demo(settings, tmp_path: Path) -> None:
    settings.DEMO_MODE = True
    settings.VAR_DIR = tmp_path
    call_command("load_demo", verbosity=0)


def test_the_demo_panel_links_the_changes_argo_cd_history_names(demo, admin_client):
    app = GitOpsApp.objects.get(cluster__name="prod-eu-1", name="payments-prod")
    # The portal saw no change of revision itself (its first poll): the history says what came before.
    assert app.previous_synced_revision == "" and app.synced_revision == HEAD
    html = admin_client.get(reverse("service", args=["payments"])).content.decode()
    panel = html[html.index('data-app="payments-prod" data-cluster="prod-eu-1"'):]
    panel = panel[: panel.index("</section>")]
    assert f'<a class="changes" href="{GIT}/compare/{FIRST}...{SECOND}"' in panel
    assert "changes aa90dea → e0a377a" in panel  # the last deployment, not HEAD's later commits
    assert f'href="{GIT}/commit/{HEAD}"' in panel


def test_the_demo_gitops_page_links_each_synced_revision_to_its_commit(demo, admin_client):
    html = admin_client.get(reverse("gitops") + "?q=payments-prod&cluster=prod-eu-1").content.decode()
    assert f'<a href="{GIT}/commit/{HEAD}" rel="noopener noreferrer">32418a9</a>' in html


def test_the_changes_link_prefers_what_the_portal_saw_replaced(catalog, admin_client):
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, repo_url=f"{GIT}.git",
             synced_revision=SECOND, previous_synced_revision="1" * 40,
             history=[{"id": 1, "revision": FIRST}, {"id": 2, "revision": SECOND}])
    html = admin_client.get(reverse("service", args=["checkout"])).content.decode()
    assert f'href="{GIT}/compare/{"1" * 40}...{SECOND}"' in html and "changes 1111111 → e0a377a" in html


def test_a_first_sync_has_no_changes_link(catalog, admin_client):
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, repo_url=f"{GIT}.git",
             synced_revision=SECOND, history=[{"id": 1, "revision": SECOND}])
    html = admin_client.get(reverse("service", args=["checkout"])).content.decode()
    assert 'class="changes"' not in html and f'href="{GIT}/commit/{SECOND}"' in html


def test_an_unknown_host_gets_no_link(catalog, admin_client):
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, repo_url="ssh://git@git.example.net/x.git",
             synced_revision=SECOND, history=[{"id": 1, "revision": FIRST}, {"id": 2, "revision": SECOND}])
    html = admin_client.get(reverse("service", args=["checkout"])).content.decode()
    assert 'class="changes"' not in html and "/commit/" not in html
    page = admin_client.get(reverse("gitops")).content.decode()
    assert '<td class="mono synced-revision">e0a377a</td>' in page


def _pr(**fields) -> PullRequest:
    values = dict(kind="upgrade", services=["checkout"], environment="prod", repository=GIT, forge_kind="github",
                  number=7, url=f"{GIT}/pull/7", title="Update checkout to 1.7.0 in prod",
                  branch="portal/checkout-1.7.0-prod", state="open", to_version="1.7.0",
                  opened_at=timezone.now() - timedelta(hours=1))
    values.update(fields)
    return PullRequest.objects.create(**values)


def test_the_pull_request_column_shows_the_apps_open_prs_a_charts_included(catalog, admin_client):
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0")
    seed_app(catalog.prod_us, "notifications", tool="flux", kind="HelmRelease", chart="notifications")
    seed_app(catalog.staging_cluster, "checkout-staging", service=catalog.checkout, version="1.6.0")
    _pr()
    _pr(services=[], number=9, url=f"{GIT}/pull/9", title="Update the notifications chart to 0.3.2 in prod",
        branch="portal/notifications-chart-0.3.2-prod", to_version="0.3.2")
    html = admin_client.get(reverse("gitops")).content.decode()

    def column(name: str) -> str:
        row = html[html.index(f'data-app="{name}"'):]
        row = row[row.index('<td class="pull-requests">'):]
        return row[: row.index("</td>")]

    assert "PR #7 open" in column("checkout-prod") and "#9" not in column("checkout-prod")
    assert "PR #9 open" in column("notifications") and "#7" not in column("notifications")
    assert "—" in column("checkout-staging")  # the PR is for prod


def test_last_change_reads_each_tools_history_as_it_writes_it():
    # Argo CD syncing the same commit again (a resync) is no change: the one before it is.
    argo = GitOpsApp(tool="argo", synced_revision=HEAD, history=[
        {"id": 1, "revision": FIRST}, {"id": 2, "revision": SECOND}, {"id": 3, "revision": SECOND}])
    assert argo.last_change() == (FIRST, SECOND)
    # A Kustomization's history as the collector keeps it (latest last), revisions "<branch>@sha1:<commit>".
    flux = GitOpsApp(tool="flux", kind="Kustomization", synced_revision=f"main@sha1:{SECOND}",
                     sources=[{"ref": "GitRepository/flux-system"}],
                     history=[{"revision": f"main@sha1:{FIRST}"}, {"revision": f"main@sha1:{SECOND}"}])
    assert flux.last_change() == (FIRST, SECOND)
    # A HelmRelease's history holds chart versions: no commits, no link.
    helm = GitOpsApp(tool="flux", kind="HelmRelease", chart="notifications", synced_revision="0.3.1",
                     sources=[{"ref": "HelmRepository/acme"}],
                     history=[{"revision": "0.3.0"}, {"revision": "0.3.1"}])
    assert helm.last_change() is None
    # What the portal saw replaced comes first; nothing at all is no link.
    seen = GitOpsApp(tool="argo", synced_revision=SECOND, previous_synced_revision=FIRST,
                     history=[{"id": 1, "revision": HEAD}, {"id": 2, "revision": SECOND}])
    assert seen.last_change() == (FIRST, SECOND)
    assert GitOpsApp(tool="argo", synced_revision=SECOND).last_change() is None
