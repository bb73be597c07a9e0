"""The demo as `make run` loads it (load_demo, then load_demo_releases with its chart repository
snapshot, examples/chart-repositories.yaml) offers a chart version of its own: prod-us-1's Flux
HelmRelease `notifications` pins the chart at 0.3.1 while https://charts.acme-shop.io lists 0.3.2
(and staging-eu-1 pins it), so /updates offers the chart upgrade and /delivery the chart
promotion, and each preview — read from the demo GitOps repository through the demo forge —
changes only the version line of the HelmRelease beside the prod overlay."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from forges.demo import build_demo_repo
from gitops.models import GitOpsApp
from portal.delivery.change_builders import change_for_chart, change_for_chart_upgrade
from portal.delivery.change_previews import preview_change
from portal.delivery.chart_upgrades import charts_behind
from portal.delivery.planner import PROMOTION
from portal.delivery.promotions import chart_promotions
from portal.releases.models import ChartPoll, ChartVersion

pytestmark = pytest.mark.django_db

CHARTS = "https://charts.acme-shop.io"
RELEASE = "apps/notifications/overlays/prod/helmrelease.yaml"
VERSION_EDIT = [(11, '      version: "0.3.1"', '      version: "0.3.2"')]


@pytest.fixture
def demo(settings, tmp_path: Path) -> str:
    settings.DEMO_MODE = True
    settings.VAR_DIR = tmp_path
    build_demo_repo(tmp_path / "demo-gitops.git")
    call_command("load_demo", verbosity=0)
    out = StringIO()
    call_command("load_demo_releases", stdout=out)
    return out.getvalue()


def prod_release() -> GitOpsApp:
    return GitOpsApp.objects.get(cluster__name="prod-us-1", kind="HelmRelease", name="notifications")


def test_the_demo_stores_its_chart_repository_versions_as_the_chart_poll_would(demo):
    assert "Demo chart versions: 10 versions of 3 charts" in demo
    versions = set(ChartVersion.objects.filter(repository=CHARTS, chart="notifications")
                   .values_list("version", flat=True))
    assert versions == {"0.2.4", "0.3.0", "0.3.1", "0.3.2"}
    poll = ChartPoll.objects.get(repository=CHARTS, chart="notifications")
    assert poll.last_error == "" and poll.last_ok_at is not None and poll.versions_seen == 4
    # Again: nothing doubles.
    out = StringIO()
    call_command("load_demo_releases", stdout=out)
    assert "Demo chart versions: 0 versions of 3 charts" in out.getvalue()
    assert ChartVersion.objects.filter(repository=CHARTS).count() == 10


def test_the_demo_offers_the_notifications_chart_upgrade_and_it_changes_only_the_version_line(demo):
    release = prod_release()
    offered = {(line.app.cluster.name, line.app.name): line for line in charts_behind() if line.target}
    # Prod pins 0.3.1 on both prod clusters that install the chart from this repository.
    assert set(offered) == {("prod-us-1", "notifications"), ("prod-eu-1", "notifications-prod")}
    line = offered["prod-us-1", "notifications"]
    assert (line.app, line.pin.ref.chart, line.pin.version, line.target, line.jump, line.no_pr) == (
        release, "notifications", "0.3.1", "0.3.2", "patch", "")

    delivery = preview_change(change_for_chart_upgrade(release, "0.3.2"))

    assert delivery.error == "" and delivery.preview is not None
    [edit] = delivery.preview.edits
    assert edit.path == RELEASE
    assert [(c.line, c.before, c.after) for c in edit.lines] == VERSION_EDIT
    assert delivery.change.base_branch == "main"


def test_the_demo_offers_the_notifications_chart_promotion_to_prod(eager_celery, demo, client, django_user_model):
    from portal.kernel.accounts.roles import Role, grant

    release = prod_release()
    [waiting] = chart_promotions()
    assert (waiting.chart, waiting.repository, waiting.version, waiting.staging, waiting.production) == (
        "notifications", CHARTS, "0.3.2", "staging", "prod")
    assert waiting.staging_apps == ["notifications-staging"]
    argo_prod = GitOpsApp.objects.get(cluster__name="prod-eu-1", name="notifications-prod")
    assert sorted(waiting.targets) == sorted([(release.pk, "notifications", "prod-us-1", "0.3.1"),
                                              (argo_prod.pk, "notifications-prod", "prod-eu-1", "0.3.1")])

    delivery = preview_change(change_for_chart(PROMOTION, release, "0.3.2", from_version="0.3.1"))
    [edit] = delivery.preview.edits
    assert (edit.path, [(c.line, c.before, c.after) for c in edit.lines]) == (RELEASE, VERSION_EDIT)

    user = django_user_model.objects.create_user("mara")
    grant(user, Role.MEMBER)
    client.force_login(user)
    html = client.get(reverse("delivery")).content.decode()
    row = html[html.index('<tr class="chart-promotion" data-chart="notifications">'):]
    row = row[: row.index("</tr>")]
    assert "Open PR → prod" in row
    link = row[row.index(f'href="/pr/preview?kind=promotion&amp;mode=grouped&amp;item={release.pk}%3A') + 6:]
    page = client.get(link[: link.index('"')].replace("&amp;", "&")).content.decode()
    assert "Promote the notifications chart 0.3.2 to prod" in page
    assert RELEASE in page and "Could not read the repository" not in page
    assert '-      version: &quot;0.3.1&quot;' in page and '+      version: &quot;0.3.2&quot;' in page


def test_a_multi_source_argo_chart_is_changed_in_its_application_manifest(demo):
    """prod-eu-1's notifications-prod takes its values from `$values/...` in the demo GitOps
    repository and pins its chart's targetRevision in its Application manifest, which no parent
    lists: the portal finds the manifest in the repository of its values
    (clusters/prod-eu-1/argocd/notifications-prod.yaml) and changes only that line."""
    argo_prod = GitOpsApp.objects.get(cluster__name="prod-eu-1", name="notifications-prod")
    delivery = preview_change(change_for_chart(PROMOTION, argo_prod, "0.3.2", from_version="0.3.1"))
    assert delivery.error == "" and delivery.preview is not None and delivery.preview.problems == []
    [edit] = delivery.preview.edits
    assert edit.path == "clusters/prod-eu-1/argocd/notifications-prod.yaml"
    assert [(c.before.strip(), c.after.strip()) for c in edit.lines] == [
        ("targetRevision: 0.3.1", "targetRevision: 0.3.2")]


def test_an_argo_chart_whose_manifest_is_in_no_repository_says_so_in_its_preview(demo):
    """The same Application planned over the repository without its manifest: nothing changes,
    and the preview says why."""
    from forges.demo import DemoForge
    from portal.delivery.planner import plan

    argo_prod = GitOpsApp.objects.get(cluster__name="prod-eu-1", name="notifications-prod")
    change = change_for_chart(PROMOTION, argo_prod, "0.3.2", from_version="0.3.1")
    entries, files = DemoForge.for_repository(change.repository).tree_files("main")
    files = {path: text for path, text in files.items() if not path.startswith("clusters/prod-eu-1/")}
    preview = plan(change, [e for e in entries if e.path in files], files, objects={argo_prod.pk: argo_prod.raw})
    assert preview.edits == []
    assert preview.problems == ["no manifest of the Application notifications-prod is in this repository"]


def test_an_argo_chart_with_a_parent_is_changed_where_the_parent_deploys_its_manifest(demo):
    from gitops.git_locations import chart_pin_sources
    from gitops.rows import ARGO

    argo_prod = GitOpsApp.objects.get(cluster__name="prod-eu-1", name="notifications-prod")
    parent = GitOpsApp.objects.filter(tool=ARGO, kind="Application", cluster=argo_prod.cluster).exclude(
        pk=argo_prod.pk).exclude(repo_url="").exclude(path="").first()
    assert parent is not None and parent.path
    raw = dict(parent.raw)
    raw["status"] = {**raw.get("status", {}), "resources": [
        {"group": "argoproj.io", "kind": "Application", "name": argo_prod.name,
         "namespace": argo_prod.raw["metadata"]["namespace"]}]}
    GitOpsApp.objects.filter(pk=parent.pk).update(raw=raw)

    source = chart_pin_sources([argo_prod])[argo_prod.pk]
    assert (source.repository, source.path, source.via) == (parent.repo_url, parent.path.strip("/"),
                                                              f"the Application {parent.name}")
    assert [line.no_pr for line in charts_behind() if line.app == argo_prod] == [""]
