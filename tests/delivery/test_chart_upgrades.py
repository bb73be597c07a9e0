"""A chart version as a change of its own: the demo's Flux HelmRelease `notifications` pins the
chart at 0.3.1; the chart repository offers newer versions (ChartVersion rows, as
portal.releases.charts stores them); the newest its service's policy accepts becomes an upgrade
whose preview — through the real forge clients against each forge fake holding the demo
repository — changes only `spec.chart.spec.version` beside the HelmRelease. A semver range is
"follows 1.2.*" with nothing to change."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.utils import timezone

from portal.delivery.change_builders import ChangeError, change_for_chart_upgrade
from portal.delivery.change_previews import preview_change
from portal.delivery.chart_upgrades import charts_behind
from portal.delivery.models import ServicePolicy
from portal.releases.models import ChartVersion
from tests.delivery.test_pin_location import CHARTS, NOTIFICATIONS, demo_files, demo_helmrelease, seed_helmrelease
from tests.fakes.forges.harness import FILES, KINDS, Harness, serving
from tests.fixtures.seed import seed_app

# Opening through the page queues a job; here it runs in the request (these tests are not about the job).
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery")]

RELEASE = f"{NOTIFICATIONS}/helmrelease.yaml"


@pytest.fixture(params=KINDS)
def demo_repo(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    with serving(request.param, monkeypatch, {**FILES, **demo_files("apps/notifications")}) as harness:
        yield harness


@pytest.fixture
def notifications(catalog):
    from portal.kernel.catalog.models import Service

    service = Service.objects.create(name="notifications", image_repository="ghcr.io/acme-shop/notifications")
    ServicePolicy.objects.create(service=service, accept="minor")
    now = timezone.now()
    for version in ("0.3.0", "0.3.1", "0.3.2", "0.4.0", "0.5.0-rc.1", "1.0.0"):
        ChartVersion.objects.create(repository=CHARTS, chart="notifications", version=version,
                                    prerelease="rc" in version, seen_at=now)
    return service


def release_applied_from(harness: Harness, catalog, service, version: str = "0.3.1"):
    seed_app(catalog.prod_us, "notifications", tool="flux", kind="Kustomization", namespace="flux-system",
             repo_url=harness.repository, path=f"./{NOTIFICATIONS}", target_revision="main")
    app = seed_helmrelease(catalog.prod_us, service, demo_helmrelease())
    if version != "0.3.1":
        app.target_revision = version
        app.sources = [{**app.sources[0], "target_revision": version}]
        app.save(update_fields=["target_revision", "sources"])
    return app


def test_the_newest_acceptable_chart_version_is_an_upgrade_that_changes_only_that_version(
    catalog, notifications, demo_repo
):
    app = release_applied_from(demo_repo, catalog, notifications)

    [line] = charts_behind()
    # accept=minor: 1.0.0 is a major jump, the release candidate is not a release.
    assert (line.app, line.pin.ref.chart, line.pin.version, line.target, line.jump) == (
        app, "notifications", "0.3.1", "0.4.0", "minor")
    assert line.follows == "" and line.no_pr == ""

    delivery = preview_change(change_for_chart_upgrade(app, line.target))

    assert delivery.error == "" and delivery.can_open, delivery.problems
    [edit] = delivery.preview.edits
    assert edit.path == RELEASE
    assert [(c.line, c.before, c.after) for c in edit.lines] == [
        (11, '      version: "0.3.1"', '      version: "0.4.0"')
    ]
    assert delivery.change.base_branch == "main" and delivery.change.repository == demo_repo.repository
    assert delivery.preview.title == "Update the notifications chart to 0.4.0 in prod"
    assert "the chart `notifications` of `https://charts.acme-shop.io`" in delivery.preview.description
    assert {method for method, _path, _status in demo_repo.server.log} == {"GET"}


@pytest.mark.parametrize("kind", ["github"])
def test_a_chart_range_follows_and_offers_nothing(catalog, notifications, monkeypatch, kind):
    with serving(kind, monkeypatch, {**FILES, **demo_files("apps/notifications")}) as harness:
        app = release_applied_from(harness, catalog, notifications, version="0.3.*")

        [line] = charts_behind()
        assert line.app == app and line.target is None and line.follows == "follows 0.3.*"
        with pytest.raises(ChangeError, match=r"follows 0\.3\.\* of the chart notifications"):
            change_for_chart_upgrade(app, "0.3.2")
        # Nothing was asked of the forge for a range.
        assert harness.server.log == []


def test_a_chart_already_at_the_newest_acceptable_is_not_behind(catalog, notifications, monkeypatch):
    with serving("github", monkeypatch, {**FILES, **demo_files("apps/notifications")}) as harness:
        release_applied_from(harness, catalog, notifications, version="0.4.0")
        assert charts_behind() == []


def test_updates_offers_the_chart_upgrade_and_its_preview_shows_the_version_edit(
    client, users, catalog, notifications, monkeypatch
):
    from django.urls import reverse

    with serving("github", monkeypatch, {**FILES, **demo_files("apps/notifications")}) as harness:
        app = release_applied_from(harness, catalog, notifications)
        client.force_login(users["member"])
        html = client.get(reverse("updates")).content.decode()
        row = html[html.index('<tr data-chart="notifications"'):]
        row = row[: row.index("</tr>")]
        assert 'data-target="0.4.0"' in row and "Open PR → 0.4.0" in row
        href = f"item={app.pk}:chart=notifications:0.4.0"
        assert href in row

        page = client.get(reverse("pr-preview") + "?kind=upgrade&" + href).content.decode()
        assert "Update the notifications chart to 0.4.0 in prod" in page
        assert RELEASE in page and '-      version: &quot;0.3.1&quot;' in page
        assert '+      version: &quot;0.4.0&quot;' in page and "Open pull request" in page

        response = client.post(reverse("pr-open"), {"kind": "upgrade", "item": f"{app.pk}:chart=notifications:0.4.0"})
        assert response.status_code == 302
        [pull] = harness.model.pulls
        assert pull.title == "Update the notifications chart to 0.4.0 in prod"
        assert pull.head == "portal/notifications-chart-0.4.0-prod"
        assert 'version: "0.4.0"' in harness.model.files_at(pull.head)[RELEASE]
        from portal.delivery.models import PullRequest

        row = PullRequest.objects.get()
        assert row.state == "open" and row.to_version == "0.4.0" and row.from_version == "0.3.1"

        # The open pull request replaces the button.
        html = client.get(reverse("updates")).content.decode()
        line = html[html.index('<tr data-chart="notifications"'):]
        line = line[: line.index("</tr>")]
        assert "Open PR" not in line and f"PR #{pull.number} open" in line


def test_updates_says_a_chart_range_follows(client, users, catalog, notifications, monkeypatch):
    from django.urls import reverse

    with serving("github", monkeypatch, {**FILES, **demo_files("apps/notifications")}) as harness:
        release_applied_from(harness, catalog, notifications, version="0.3.*")
        client.force_login(users["member"])
        html = client.get(reverse("updates")).content.decode()
        row = html[html.index('<tr data-chart="notifications"'):]
        row = row[: row.index("</tr>")]
        assert "follows 0.3.*: a range, nothing to change" in row and "Open PR" not in row


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_updates_in_a_browser_shows_the_chart_offer(page, live_server, catalog, notifications, monkeypatch):

    from tests.fixtures.browser import log_in_as_member, screenshot

    with serving("github", monkeypatch, {**FILES, **demo_files("apps/notifications")}) as harness:
        release_applied_from(harness, catalog, notifications)
        log_in_as_member(page, live_server.url)
        page.goto(f"{live_server.url}/updates")
        row = page.locator('tr[data-chart="notifications"]')
        assert row.locator("a.open-pr").inner_text().strip() == "Open PR → 0.4.0"
        screenshot(page, "updates-chart-versions")
        row.locator("a.open-pr").click()
        page.wait_for_url("**/pr/preview?**")
        preview = page.locator("section.preview").first
        assert preview.locator(".diff .del").first.inner_text().strip() == '-      version: "0.3.1"'
        assert preview.locator(".diff .add").first.inner_text().strip() == '+      version: "0.4.0"'
        screenshot(page, "chart-upgrade-preview")


def test_a_chart_listed_after_a_ref_source_is_polled_and_offered(catalog):
    # gitops-bridge's ApplicationSet: `ref: values` first (no path), the ingress-nginx chart second.
    from gitops.collectors.argocd import application_row
    from gitops.derive.app_changes import plain
    from portal.releases.charts import ChartRef, used_charts
    from tests.forges.layout_cases import gitops_bridge_prod_app

    row = application_row(gitops_bridge_prod_app())
    primary = row.sources[0]
    assert primary.chart == "" and primary.path == ""
    app = seed_app(catalog.prod_eu, row.name, repo_url=primary.repo_url, path="", chart="",
                   target_revision=primary.target_revision, sources=[plain(s) for s in row.sources], raw=row.raw)
    chart = ChartRef("https://kubernetes.github.io/ingress-nginx", "ingress-nginx")
    assert used_charts() == [chart]
    for version in ("4.10.0", "4.10.1", "4.11.0"):
        ChartVersion.objects.create(repository=chart.repository, chart=chart.chart, version=version,
                                    seen_at=timezone.now())

    [line] = charts_behind()
    assert (line.app, line.pin.version, line.target, line.no_pr) == (app, "4.10.0", "4.11.0", "")


def test_a_chart_version_pinned_in_staging_is_offered_as_a_promotion_to_prod(
    client, users, catalog, notifications, monkeypatch
):
    from django.urls import reverse

    from portal.delivery.promotions import chart_promotions

    with serving("github", monkeypatch, {**FILES, **demo_files("apps/notifications")}) as harness:
        prod = release_applied_from(harness, catalog, notifications)  # pins 0.3.1 on prod-us-1
        seed_app(catalog.staging_cluster, "notifications", service=notifications, version="0.8.4", tool="flux",
                 kind="HelmRelease", namespace="notifications", repo_url=CHARTS, path="", chart="notifications",
                 target_revision="0.3.2", raw={"metadata": {"name": "notifications"}},
                 sources=[{"repo_url": CHARTS, "chart": "notifications", "target_revision": "0.3.2", "path": ""}])

        [waiting] = chart_promotions()
        assert (waiting.chart, waiting.version, waiting.staging, waiting.production) == (
            "notifications", "0.3.2", "staging", "prod")
        assert waiting.targets == [(prod.pk, "notifications", "prod-us-1", "0.3.1")]

        client.force_login(users["member"])
        html = client.get(reverse("delivery")).content.decode()
        row = html[html.index('<tr class="chart-promotion" data-chart="notifications">'):]
        row = row[: row.index("</tr>")]
        assert "Open PR → prod" in row and "pins <span class=\"mono\">0.3.1</span>" in row
        link = row[row.index('href="') + 6:]
        link = link[: link.index('"')].replace("&amp;", "&")

        page = client.get(link).content.decode()
        assert "Promote the notifications chart 0.3.2 to prod" in page
        assert '+      version: &quot;0.3.2&quot;' in page and '-      version: &quot;0.3.1&quot;' in page


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_delivery_in_a_browser_shows_the_chart_promotion(page, live_server, catalog, notifications, monkeypatch):

    from tests.fixtures.browser import log_in_as_member, screenshot

    with serving("github", monkeypatch, {**FILES, **demo_files("apps/notifications")}) as harness:
        release_applied_from(harness, catalog, notifications)
        seed_app(catalog.staging_cluster, "notifications", service=notifications, version="0.8.4", tool="flux",
                 kind="HelmRelease", namespace="notifications", repo_url=CHARTS, path="", chart="notifications",
                 target_revision="0.3.2", raw={"metadata": {"name": "notifications"}},
                 sources=[{"repo_url": CHARTS, "chart": "notifications", "target_revision": "0.3.2", "path": ""}])
        log_in_as_member(page, live_server.url)
        page.goto(f"{live_server.url}/delivery")
        row = page.locator('tr.chart-promotion[data-chart="notifications"]')
        assert row.locator("a.promote-chart").inner_text().strip() == "Open PR → prod"
        row.scroll_into_view_if_needed()
        screenshot(page, "delivery-chart-promotion")
