"""What the daily pages show from a seeded store: problems first, the grace period,
badges with until-when, filters in the URL, constant query counts, untrusted strings."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from gitops.models import ClusterPoll
from portal.kernel.catalog.models import Cluster
from tests.fixtures.seed import seed_app, seed_fleet, seed_pin

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer_client(client, users):
    client.force_login(users["viewer"])
    return client


def test_gitops_lists_degraded_first_and_respects_the_grace_period(viewer_client, catalog):
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout)
    seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, health="Degraded",
             since=timedelta(minutes=25))
    seed_app(catalog.staging_cluster, "payments-staging", service=catalog.payments, sync="OutOfSync",
             since=timedelta(minutes=3))
    html = viewer_client.get(reverse("gitops")).content.decode()
    assert html.index("payments-prod") < html.index("payments-staging") < html.index("checkout-prod")

    attention = viewer_client.get(reverse("gitops") + "?attention=1").content.decode()
    assert "payments-prod" in attention
    assert "payments-staging" not in attention  # out of sync for 3 min: not news yet
    assert "checkout-prod" not in attention


def test_matrix_marks_a_cell_only_past_the_grace_period(viewer_client, catalog):
    seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, version="2.5.0", health="Degraded",
             since=timedelta(minutes=25))
    seed_app(catalog.staging_cluster, "checkout-staging", service=catalog.checkout, version="1.7.0",
             health="Degraded", since=timedelta(minutes=2))
    html = viewer_client.get(reverse("matrix")).content.decode()
    assert "Argo: degraded" in html
    assert html.count(">Argo: degraded<") == 1  # checkout's two minutes are not news
    assert "2.5.0" in html and "1.7.0" in html


def test_matrix_groups_clusters_with_the_same_problem_and_keeps_each_ones_since(viewer_client, catalog):
    third = Cluster.objects.create(name="prod-ap-1", environment=catalog.prod, connection=catalog.prod_eu.connection)
    seed_app(catalog.prod_eu, "payments-eu", service=catalog.payments, version="2.5.0", health="Degraded",
             since=timedelta(minutes=40))
    seed_app(catalog.prod_us, "payments-us", service=catalog.payments, version="2.5.0", health="Degraded",
             since=timedelta(hours=3))
    seed_app(third, "payments-ap", service=catalog.payments, version="2.4.1")
    html = viewer_client.get(reverse("matrix")).content.decode()
    row = html[html.index('data-service="payments"'):]
    cell = row[row.index('<td class="cell attention">'):]
    cell = cell[: cell.index("</td>")]
    lines = cell.split('<span class="cell-line"')[1:]
    assert len(lines) == 2  # one line for the release degraded on two clusters, one for the healthy one
    assert "2 clusters" in lines[0] and lines[0].count(">Argo: degraded<") == 1 and "2.5.0" in lines[0]
    title = lines[0][lines[0].index('title="') + 7:].split('"', 1)[0]
    assert "payments-eu on prod-eu-1" in title and "payments-us on prod-us-1" in title
    assert title.count(" since ") == 2
    assert "prod-ap-1" in lines[1] and "2.4.1" in lines[1] and "badge" not in lines[1]


def test_overview_sorts_tiles_needing_attention_first(viewer_client, catalog):
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout)
    seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, health="Missing", since=timedelta(hours=1))
    response = viewer_client.get(reverse("overview"))
    html = response.content.decode()
    assert html.index('data-service="payments"') < html.index('data-service="checkout"')
    assert response.context["counts"]["attention"] == 1


def test_a_tile_shows_its_worst_problems_first_and_counts_the_rest(viewer_client, catalog):
    long_ago = timedelta(hours=1)
    for i in range(3):
        seed_app(catalog.prod_us, f"payments-oos-{i}", service=catalog.payments, sync="OutOfSync", since=long_ago)
    seed_app(catalog.staging_cluster, "payments-staging", service=catalog.payments, health="Degraded", since=long_ago)
    seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, version="2.6.0", health="Missing",
             since=long_ago)
    seed_app(catalog.dev_cluster, "payments-dev", service=catalog.payments, version="2.7.0-rc.1")
    seed_app(catalog.prod_eu, "payments-new", service=catalog.payments, health="Degraded", since=timedelta(minutes=2))
    html = viewer_client.get(reverse("overview")).content.decode()
    tile = html[html.index('data-service="payments"'):]
    tile = tile[: tile.index("</article>")]
    # Degraded and missing before out of sync, then by environment order: staging before prod.
    assert tile.index("Argo: degraded") < tile.index("Argo: missing") < tile.index("Argo: out of sync")
    assert tile.count('class="badge') == 4  # the first four of five apps past the grace period
    assert "and 1 more: see the service page" in tile
    assert "payments-new" not in tile  # two minutes degraded: not news yet
    assert "<dt>dev</dt><dd><span class=\"mono\">2.7.0-rc.1</span>" in tile
    assert "<dt>prod</dt><dd><span class=\"mono\">1.0.0, 2.6.0</span>" in tile


def test_sync_window_badge_says_until_when_and_disappears_once_closed(viewer_client, catalog):
    now = timezone.now()
    seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, sync="OutOfSync",
             sync_blocked=True, sync_blocked_until=now + timedelta(hours=5),
             sync_window={"kind": "deny", "description": "weekend freeze", "schedule": "0 18 * * 5"})
    seed_app(catalog.prod_us, "payments-us", service=catalog.payments,
             sync_blocked=True, sync_blocked_until=now - timedelta(minutes=1),
             sync_window={"kind": "deny", "description": "closed already"})
    seed_app(catalog.staging_cluster, "payments-staging", service=catalog.payments, sync_blocked=True,
             sync_window={"kind": "deny", "description": "no end", "schedule": "0 0 * * *", "duration": "24h"})
    html = viewer_client.get(reverse("gitops")).content.decode()
    assert "deny &#x27;weekend freeze&#x27; until " in html
    assert ">sync window until " in html  # on the badge itself, not only in its title
    assert "deny &#x27;no end&#x27; with no end in sight" in html and ">sync window with no end in sight<" in html
    assert "closed already" not in html


def test_manual_sync_suspended_and_stale_badges(viewer_client, catalog):
    ClusterPoll.objects.create(cluster=catalog.prod_us, stale_since=timezone.now() - timedelta(minutes=30),
                               last_error="timeout: read timed out")
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, manual_sync=True)
    seed_app(catalog.prod_us, "checkout-us", service=catalog.checkout, tool="flux", suspended=True)
    html = viewer_client.get(reverse("gitops")).content.decode()
    assert "manual sync" in html and "suspended" in html and "stale" in html


def test_filters_are_kept_in_links_and_unknown_values_do_not_break(viewer_client, catalog):
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout)
    seed_app(catalog.dev_cluster, "checkout-dev", service=catalog.checkout, tool="flux")
    html = viewer_client.get(reverse("gitops") + "?environment=prod&tool=argo").content.decode()
    assert "checkout-prod" in html and "checkout-dev" not in html
    assert viewer_client.get(reverse("gitops") + "?status=nonsense&sort=nonsense&page=x").status_code == 200


def test_gitops_takes_the_apis_filter_names_and_its_pager_keeps_them(viewer_client, catalog):
    from gitops.models import GitOpsApp

    seed_fleet([catalog.prod_eu, catalog.dev_cluster], [catalog.checkout, catalog.payments], apps_per_cluster=40)
    seed_app(catalog.prod_eu, "payments-broken", service=catalog.payments, health="Missing", since=timedelta(hours=1))
    url = reverse("gitops")
    html = viewer_client.get(url + "?health=Missing").content.decode()
    assert "payments-broken" in html and "1 application, also filtered by health = Missing" in html
    assert "payments-broken" in viewer_client.get(url + "?needs_attention=true").content.decode()
    healthy = GitOpsApp.objects.filter(health_status="Healthy").count()
    assert healthy > 50  # two pages
    everything = viewer_client.get(url + "?health=Healthy").content.decode()
    assert f"{healthy} applications" in everything and "payments-broken" not in everything
    next_link = everything[: everything.index("next →")].rsplit('href="', 1)[1].split('"', 1)[0]
    assert "health=Healthy" in next_link and "page=2" in next_link


def test_the_gitops_form_shows_the_service_filter_and_keeps_the_ones_it_has_no_control_for(viewer_client, catalog):
    """A service page links to /gitops?service=…&environment=…: the form shows the service, and a
    filter without a control of its own (health, as the API names it) is sent again when another
    changes."""
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, health="Missing", since=timedelta(hours=1))
    seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, health="Missing", since=timedelta(hours=1))
    html = viewer_client.get(reverse("gitops") + "?service=checkout&health=Missing").content.decode()
    assert "checkout-prod" in html and "payments-prod" not in html
    form = html[html.index('<form class="filters"'):]
    form = form[:form.index("</form>")]
    service = form[form.index('<select name="service">'):]
    service = service[:service.index("</select>")]
    assert "<option selected>checkout</option>" in service and "<option >payments</option>" in service
    assert '<input type="hidden" name="health" value="Missing">' in form
    assert 'type="hidden" name="service"' not in form and 'type="hidden" name="q"' not in form
    # Said where the count is, with a link that drops it and keeps the rest.
    assert "also filtered by health = Missing" in html
    assert f'<a href="{reverse("gitops")}?service=checkout">drop</a>' in html


def test_gitops_pages_count_once_and_past_the_end_shows_the_last_page(viewer_client, catalog):
    seed_fleet([catalog.prod_eu, catalog.dev_cluster], [catalog.checkout, catalog.payments], apps_per_cluster=30)
    url = reverse("gitops")

    def rows(html: str) -> int:
        return html.count('<tr class="app')

    first = viewer_client.get(url).content.decode()
    assert rows(first) == 50 and "60 applications" in first and "page 1 of 2" in first
    second = viewer_client.get(url + "?page=2").content.decode()
    assert rows(second) == 10 and "page 2 of 2" in second and "← previous" in second
    assert "next →" not in second
    assert rows(viewer_client.get(url + "?page=99").content.decode()) == 10  # the last page, as Django's paginator
    assert rows(viewer_client.get(url + "?page=0").content.decode()) == 10  # Django's paginator: the last
    assert rows(viewer_client.get(url + "?page=x").content.decode()) == 50  # and the first
    filtered = viewer_client.get(url + "?environment=dev&tool=flux").content.decode()
    assert "10 applications" in filtered and "page 1 of 1" in filtered and rows(filtered) == 10
    nothing = viewer_client.get(url + "?q=no-such-app").content.decode()
    assert "0 applications" in nothing and rows(nothing) == 0
    # A text search counts in the page's own query: the same figures and pages.
    searched = viewer_client.get(url + "?q=checkout").content.decode()
    assert rows(searched) == 30 and "30 applications" in searched and "page 1 of 1" in searched
    everything = viewer_client.get(url + "?q=-").content.decode()
    assert rows(everything) == 50 and "60 applications" in everything and "page 1 of 2" in everything
    last = viewer_client.get(url + "?q=-&page=2").content.decode()
    assert rows(last) == 10 and "page 2 of 2" in last
    assert rows(viewer_client.get(url + "?q=-&page=7").content.decode()) == 10
    assert rows(viewer_client.get(url + "?q=-&page=0").content.decode()) == 10
    assert rows(viewer_client.get(url + "?q=-&page=x").content.decode()) == 50


def test_htmx_requests_get_only_the_table(viewer_client, catalog):
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout)
    html = viewer_client.get(reverse("gitops"), HTTP_HX_REQUEST="true").content.decode()
    assert html.lstrip().startswith("<div id=\"gitops-table\"") or 'id="gitops-table"' in html[:200]
    assert "<html" not in html


def test_service_page_has_a_panel_per_cluster_with_links_and_since(viewer_client, catalog, settings):
    settings.PORTAL_ARGOCD_URL = "https://argocd.example.com"
    seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, namespace="team-payments",
             previous_synced_revision="1111111111111111111111111111111111111111")
    seed_app(catalog.staging_cluster, "payments-staging", service=catalog.payments, version="2.6.0")
    html = viewer_client.get(reverse("service", kwargs={"name": "payments"})).content.decode()
    assert 'data-cluster="prod-eu-1"' in html and 'data-cluster="staging-eu-1"' in html
    assert "https://argocd.example.com/applications/team-payments/payments-prod" in html
    assert "2/2 ready" in html
    assert 'href="https://github.com/acme/gitops/commit/4f1d2c3b5a6978877665544332211aabbccddeef"' in html
    assert ('href="https://github.com/acme/gitops/compare/1111111111111111111111111111111111111111...'
            '4f1d2c3b5a6978877665544332211aabbccddeef"') in html


def test_untrusted_strings_are_escaped_and_bad_urls_never_become_links(viewer_client, catalog):
    seed_app(catalog.prod_eu, "<script>alert(1)</script>", service=catalog.payments, health="Degraded",
             since=timedelta(hours=1), health_message='<img src=x onerror="alert(2)">',
             repo_url="javascript:alert(3)//github.com/acme/x")
    for url in (reverse("gitops"), reverse("service", kwargs={"name": "payments"}), reverse("overview"),
                reverse("matrix")):
        html = viewer_client.get(url).content.decode()
        assert "<script>alert(1)</script>" not in html
        assert '<img src=x onerror="alert(2)">' not in html
        assert 'href="javascript:' not in html


def test_matrix_says_when_git_pins_another_version_than_runs(viewer_client, catalog):
    app = seed_app(catalog.prod_eu, "search-prod", service=catalog.checkout, version="1.6.0")
    seed_app(catalog.prod_us, "search-us", service=catalog.checkout, version="1.6.0")
    seed_pin(app, catalog.checkout, "1.7.0", line=3)
    html = viewer_client.get(reverse("matrix")).content.decode()
    assert "Git pins 1.7.0, runs 1.6.0" in html  # the tooltip of prod-eu-1's line
    assert html.count(">Git pins 1.7.0<") == 1  # prod-us-1 has no pin read: no claim made


def test_an_empty_portal_explains_what_will_appear_and_how_to_connect(client, users):
    client.force_login(users["viewer"])
    assert "No cluster is connected yet" in client.get(reverse("overview")).content.decode()
    assert "No application has been collected yet" in client.get(reverse("gitops")).content.decode()
    assert "No service is registered yet" in client.get(reverse("matrix")).content.decode()
    assert "No service is registered yet" in client.get(reverse("updates")).content.decode()
    assert client.get(reverse("delivery")).status_code == 200
    assert "No cluster is connected yet" in client.get(reverse("clusters")).content.decode()


@pytest.mark.parametrize("page", ["matrix", "overview"])
def test_a_drawn_page_frees_its_rows_without_waiting_for_the_garbage_collector(viewer_client, catalog, page):
    import gc

    from portal.web.fleet import CellLine, ServiceRow
    from portal.web.tiles import Tile

    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout)
    seed_app(catalog.prod_us, "payments-prod", service=catalog.payments, health="Degraded",
             since=timedelta(minutes=30))
    gc.collect()
    gc.disable()
    try:
        response = viewer_client.get(reverse(page))
        assert response.status_code == 200 and "payments" in response.content.decode()
        del response
        drawn = {ServiceRow, CellLine, Tile}
        # type(), not isinstance(): the heap may hold dead weak proxies, which raise on isinstance.
        left = [o for o in gc.get_objects() if type(o) in drawn]
    finally:
        gc.enable()
    assert left == []  # Django's Context cycle would keep them until a collection
