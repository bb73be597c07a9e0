"""Promotions waiting: a version running in staging that production runs an older version of,
since when, one "Open PR → prod" per production cluster, and "Promote <app> → prod" when
several services of one application wait together."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.urls import reverse
from django.utils import timezone

from gitops.models import RunningVersion, VersionChange
from portal.delivery import version_matrix
from portal.delivery.models import PullRequest
from portal.delivery.promotions import Running, from_git_pins, groups, load, staging_for, trains, waiting
from portal.kernel.catalog.models import Environment
from tests.fixtures.seed import seed_app

T0 = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
PAIRS = {"prod": "staging"}


def run(service, version, cluster, environment, app_id=None, app="", first_seen=None) -> Running:
    return Running(service, version, cluster, environment, app_id, app, first_seen)


def test_staging_is_the_environment_just_before_production():
    envs = [Environment(name="dev", order=1), Environment(name="staging", order=2),
            Environment(name="prod", order=3, production=True), Environment(name="prod-cn", order=4, production=True)]
    assert staging_for(envs) == {"prod": "staging", "prod-cn": "staging"}
    assert staging_for([Environment(name="prod", order=1, production=True)]) == {}


def test_a_newer_staging_version_waits_for_each_older_prod_cluster_since_it_arrived():
    rows = [
        run("checkout", "1.7.0", "staging-eu-1", "staging"),
        run("checkout", "1.6.0", "prod-eu-1", "prod", 11, "checkout-eu"),
        run("checkout", "1.7.0", "prod-us-1", "prod", 12, "checkout-us"),  # already there
        run("checkout", "1.5.0", "prod-ap-1", "prod", 13, "checkout-ap"),
    ]
    arrived = {("checkout", "staging-eu-1", "1.7.0"): T0}
    [promotion] = waiting(PAIRS, rows, arrived)
    assert (promotion.service, promotion.version, promotion.since, promotion.since_exact) == (
        "checkout", "1.7.0", T0, True)
    assert [(t.cluster, t.current) for t in promotion.targets] == [("prod-ap-1", "1.5.0"), ("prod-eu-1", "1.6.0")]


def test_nothing_waits_when_prod_is_newer_or_a_tag_is_not_a_version():
    assert waiting(PAIRS, [run("checkout", "1.7.0", "s", "staging"), run("checkout", "1.8.0", "p", "prod")], {}) == []
    assert waiting(PAIRS, [run("checkout", "latest", "s", "staging"), run("checkout", "1.8.0", "p", "prod")], {}) == []
    assert waiting(PAIRS, [run("checkout", "1.9.0-alpine", "s", "staging"), run("checkout", "1.8.0", "p", "prod")],
                   {}) == []  # another tag family


def test_without_a_recorded_change_since_is_the_first_sight_and_marked_at_least():
    rows = [run("checkout", "1.7.0", "staging-eu-1", "staging", first_seen=T0),
            run("checkout", "1.6.0", "prod-eu-1", "prod", 11, "checkout-eu")]
    [promotion] = waiting(PAIRS, rows, {})
    assert promotion.since == T0 and not promotion.since_exact


def test_services_of_one_prod_application_waiting_together_make_one_group():
    rows = [
        run("checkout", "1.7.0", "staging-eu-1", "staging"),
        run("cart", "2.1.0", "staging-eu-1", "staging"),
        run("checkout", "1.6.0", "prod-eu-1", "prod", 11, "shop"),
        run("cart", "2.0.0", "prod-eu-1", "prod", 11, "shop"),
        run("checkout", "1.6.0", "prod-us-1", "prod", 12, "checkout-us"),
    ]
    [group] = groups(waiting(PAIRS, rows, {}))
    assert (group.app, group.cluster, group.production) == ("shop", "prod-eu-1", "prod")
    assert group.moves == [("cart", "2.0.0", "2.1.0"), ("checkout", "1.6.0", "1.7.0")]


def test_what_waits_for_one_production_environment_makes_one_train_without_the_left_out():
    rows = [
        run("checkout", "1.7.0", "staging-eu-1", "staging"),
        run("cart", "2.1.0", "staging-eu-1", "staging"),
        run("checkout", "1.6.0", "prod-eu-1", "prod", 11, "checkout-eu"),
        run("cart", "2.0.0", "prod-us-1", "prod", 21, "cart-us"),
        run("cart", "2.0.0", "prod-eu-1", "prod", 22, "cart-eu"),
    ]
    found = waiting(PAIRS, rows, {})
    [train] = trains(found)
    assert (train.production, train.staging, train.services) == ("prod", "staging", ["cart", "checkout"])
    assert train.moves == [("22", "cart", "2.0.0", "2.1.0"), ("21", "cart", "2.0.0", "2.1.0"),
                           ("11", "checkout", "1.6.0", "1.7.0")]
    # Without checkout's one target (say, a PR is open for it), one service is left: no train.
    assert trains(found, lambda target: target.app_id == 11) == []


def test_git_pins_decide_where_a_promotion_starts_and_whether_it_waits():
    rows = [
        run("payments", "2.5.0", "staging-eu-1", "staging"),
        run("payments", "2.4.0", "prod-eu-1", "prod", 46, "payments-prod"),  # Git pins 2.4.1
        run("payments", "2.4.0", "prod-us-1", "prod", 47, "payments-us"),  # Git pins 2.5.0: merged, waiting
        run("payments", "2.4.0", "prod-ap-1", "prod", 48, "payments-ap"),  # Git pins two versions
    ]
    pins = {(46, "payments"): ["2.4.1"], (47, "payments"): ["2.5.0"], (48, "payments"): ["2.4.0", "latest"]}
    [promotion] = from_git_pins(waiting(PAIRS, rows, {}), pins)
    assert [(t.app, t.current, t.pinned, t.start) for t in promotion.targets] == [
        ("payments-ap", "2.4.0", "", "2.4.0"), ("payments-prod", "2.4.0", "2.4.1", "2.4.1")]
    assert from_git_pins(waiting(PAIRS, rows[:3], {}), {**pins, (46, "payments"): ["2.6.0"]}) == []


@pytest.mark.django_db
def test_load_reads_since_from_the_version_change_in_staging(catalog):
    now = timezone.now()
    staging = seed_app(catalog.staging_cluster, "checkout-staging", service=catalog.checkout, version="1.7.0")
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0")
    arrived = now - timedelta(hours=26)
    VersionChange.objects.create(service=catalog.checkout, environment=catalog.staging,
                                 cluster=catalog.staging_cluster, app=staging, from_version="1.6.0",
                                 to_version="1.7.0", at=arrived)
    [promotion], grouped = load()
    assert promotion.since == arrived and promotion.since_exact
    assert promotion.staging_clusters == ["staging-eu-1"] and grouped == []


def test_load_without_a_recorded_change_dates_the_wait_by_the_tools_last_sync(catalog):
    now = timezone.now()
    # A fresh portal: no version change seen yet, but Argo CD dates the staging app's last sync.
    synced = now - timedelta(days=6)
    seed_app(catalog.staging_cluster, "checkout-staging", service=catalog.checkout, version="1.7.0",
             since=timedelta(days=6), now=now, sync_since_exact=True, first_seen=now - timedelta(minutes=1))
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0")
    [promotion], _ = load()
    assert (promotion.since, promotion.since_exact) == (synced, False)  # "at least since" six days ago


def test_load_without_a_tool_time_dates_the_wait_by_the_first_sight(catalog):
    now = timezone.now()
    seen = now - timedelta(minutes=1)
    seed_app(catalog.staging_cluster, "checkout-staging", service=catalog.checkout, version="1.7.0",
             since=timedelta(days=6), now=now, sync_since_exact=False, first_seen=seen)
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0")
    [promotion], _ = load()
    assert (promotion.since, promotion.since_exact) == (seen, False)


@pytest.mark.django_db
def test_delivery_page_offers_one_button_per_prod_cluster_to_members(client, users, catalog):
    seed_app(catalog.staging_cluster, "checkout-staging", service=catalog.checkout, version="1.7.0")
    eu = seed_app(catalog.prod_eu, "checkout-eu", service=catalog.checkout, version="1.6.0")
    us = seed_app(catalog.prod_us, "checkout-us", service=catalog.checkout, version="1.6.1")
    client.force_login(users["member"])
    response = client.get(reverse("delivery"))
    html = response.content.decode()
    assert html.count("Open PR → prod") == 2
    [(promotion, offers, more)] = response.context["promotions"]
    assert [o.cluster for o in offers] == ["prod-eu-1", "prod-us-1"] and more == 0
    query = parse_qs(urlsplit(offers[0].url).query)
    assert urlsplit(offers[0].url).path == reverse("pr-preview")
    assert query["kind"] == ["promotion"] and query["item"] == [f"{eu.pk}:checkout:1.7.0:1.6.0"]
    assert parse_qs(urlsplit(offers[1].url).query)["item"] == [f"{us.pk}:checkout:1.7.0:1.6.1"]

    client.force_login(users["viewer"])
    viewer_html = client.get(reverse("delivery")).content.decode()
    assert "Open PR → prod" not in viewer_html and "a member can open the promotion" in viewer_html


@pytest.mark.django_db
def test_several_services_of_one_app_get_promote_app(client, users, catalog):
    seed_app(catalog.staging_cluster, "checkout-staging", service=catalog.checkout, version="1.7.0")
    seed_app(catalog.staging_cluster, "payments-staging", service=catalog.payments, version="2.6.0")
    shop = seed_app(catalog.prod_eu, "shop-prod", service=catalog.checkout, version="1.6.0")
    shop.services.add(catalog.payments)
    workload = shop.workloads.get()
    RunningVersion.objects.create(cluster=catalog.prod_eu, workload=workload, app=shop, service=catalog.payments,
                                  container="payments", image="ghcr.io/acme/payments:2.5.0", version="2.5.0")
    version_matrix.refresh(catalog.prod_eu.id)
    client.force_login(users["member"])
    response = client.get(reverse("delivery"))
    assert "Promote shop-prod → prod" in response.content.decode()
    [(group, url)] = response.context["groups"]
    assert parse_qs(urlsplit(url).query)["item"] == [f"{shop.pk}:checkout:1.7.0:1.6.0",
                                                     f"{shop.pk}:payments:2.6.0:2.5.0"]


@pytest.mark.django_db
def test_an_open_promotion_pr_replaces_the_button(client, users, catalog):
    seed_app(catalog.staging_cluster, "checkout-staging", service=catalog.checkout, version="1.7.0")
    seed_app(catalog.prod_eu, "checkout-eu", service=catalog.checkout, version="1.6.0")
    PullRequest.objects.create(
        kind="promotion", services=["checkout"], environment="prod", clusters=["prod-eu-1"],
        repository="https://github.com/acme/gitops", forge_kind="github", number=9,
        url="https://github.com/acme/gitops/pull/9", title="Promote checkout 1.7.0 to prod", branch="p",
        base_branch="main", state="open", from_version="1.6.0", to_version="1.7.0", opened_at=timezone.now(),
    )
    client.force_login(users["member"])
    html = client.get(reverse("delivery")).content.decode()
    assert "PR #9 open" in html and "Open PR → prod" not in html


@pytest.mark.django_db
def test_a_promotion_pr_body_says_since_when_the_version_ran_in_the_environment_before(catalog):
    from portal.delivery.change_builders import change_for_promotion
    from portal.delivery.planner import describe
    from portal.kernel.timestamps import utc_stamp

    now = timezone.now()
    staging = seed_app(catalog.staging_cluster, "checkout-staging", service=catalog.checkout, version="1.7.0")
    prod = seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0")
    arrived = now - timedelta(hours=26)
    VersionChange.objects.create(service=catalog.checkout, environment=catalog.staging,
                                 cluster=catalog.staging_cluster, app=staging, from_version="1.6.0",
                                 to_version="1.7.0", at=arrived)

    change = change_for_promotion(prod, catalog.checkout, "1.7.0", release_notes="")

    assert (change.ran_in, change.ran_since, change.ran_since_exact) == ("staging", arrived, True)
    body = describe([change], [], [], [])
    assert f"**Why**: 1.7.0 has run in `staging` since {utc_stamp(arrived)}." in body

    # No recorded change: the first sight, said as "at least since".
    VersionChange.objects.all().delete()
    later = change_for_promotion(prod, catalog.checkout, "1.7.0", release_notes="")
    assert not later.ran_since_exact and "has run in `staging` at least since" in describe([later], [], [], [])


@pytest.mark.django_db
def test_load_asks_the_read_model_which_services_can_wait_and_sorts_no_running_rows_in_sql(catalog):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    staging = seed_app(catalog.staging_cluster, "checkout-staging", service=catalog.checkout, version="1.7.0")
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0")
    # A second container at the same version: still one row, one offer.
    RunningVersion.objects.create(cluster=catalog.staging_cluster, app=staging, service=catalog.checkout,
                                  container="sidecar", image="ghcr.io/acme/checkout:1.7.0", version="1.7.0")
    with CaptureQueriesContext(connection) as queries:
        found, _ = load()

    assert [(p.service, p.version, [t.cluster for t in p.targets]) for p in found] == [
        ("checkout", "1.7.0", [catalog.prod_eu.name])]
    assert found[0].staging_clusters == [catalog.staging_cluster.name]
    # Queries of running versions themselves (applications and workloads are then read by the
    # ids of a subquery of them, gitops.queries.with_ids_from).
    running = [q["sql"] for q in queries.captured_queries
               if q["sql"].split(" FROM ", 1)[-1].startswith('"gitops_runningversion"')]
    # Workloads outside GitOps are not in VersionLine: their few rows only (app IS NULL).
    outside = [sql for sql in running if '"gitops_runningversion"."app_id" IS NULL' in sql]
    assert len(outside) == 1
    running = [sql for sql in running if sql not in outside]
    assert len(running) == 1, "which services can wait is read from VersionLine, not every running row"
    assert "DISTINCT" not in running[0]
    assert any('FROM "delivery_versionline"' in q["sql"] for q in queries.captured_queries)


@pytest.mark.django_db
def test_the_train_promotes_every_waiting_service_not_only_the_shown_page(client, users, catalog):
    """Twelve services wait and the table shows ten a page: "Promote all 12 → prod" carries all
    twelve moves, and the second page of the table shows the other two."""
    from portal.kernel.catalog.models import Service

    for n in range(12):
        service = Service.objects.create(name=f"svc-{n:02d}", image_repository=f"ghcr.io/acme/svc-{n:02d}")
        seed_app(catalog.staging_cluster, f"svc-{n:02d}-staging", service=service, version="1.1.0")
        seed_app(catalog.prod_eu, f"svc-{n:02d}-prod", service=service, version="1.0.0")
    client.force_login(users["member"])
    response = client.get(reverse("delivery"))
    assert len(response.context["promotions"]) == 10
    [(train, url)] = response.context["trains"]
    assert len(train.services) == 12 and "Promote all 12 → prod" in response.content.decode()
    assert len(parse_qs(urlsplit(url).query)["item"]) == 12
    second = client.get(reverse("delivery") + "?promotions_page=2")
    assert len(second.context["promotions"]) == 2


@pytest.mark.django_db
def test_a_promotion_waiting_for_many_clusters_lists_a_dozen_and_links_to_all(client, users, catalog):
    """Forty production clusters wait for one version: the whole page lists twelve of them and
    says how many more, and the link it gives (the page filtered to the service) lists all forty,
    each with its own button."""
    from portal.kernel.catalog.models import Cluster

    seed_app(catalog.staging_cluster, "checkout-staging", service=catalog.checkout, version="1.7.0")
    for n in range(40):
        cluster = Cluster.objects.create(name=f"prod-x-{n:02d}", environment=catalog.prod_eu.environment)
        seed_app(cluster, f"checkout-x-{n:02d}", service=catalog.checkout, version="1.6.0")
    client.force_login(users["member"])
    response = client.get(reverse("delivery"))
    [(promotion, offers, more)] = response.context["promotions"]
    assert len(promotion.targets) == 40 and len(offers) == 12 and more == 28
    html = response.content.decode()
    assert html.count("Open PR → prod") == 12
    link = re.search(r'<a href="([^"]+)">and 28 more production clusters: show all</a>', html).group(1)
    assert link == "?service=checkout#promotions"
    every = client.get(reverse("delivery") + link.split("#")[0])
    [(_, all_offers, none_more)] = every.context["promotions"]
    assert len(all_offers) == 40 and none_more == 0
    assert every.content.decode().count("Open PR → prod") == 40
