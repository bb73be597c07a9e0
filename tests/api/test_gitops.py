"""GET /api/v1/gitops and /api/v1/gitops/<cluster>/<namespace>/<name>: the contract of every
field, filters and sorts, keyset pages that stay stable under inserts, and query counts
that do not grow with the page."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from gitops.models import StateChange, VersionChange
from portal.kernel.accounts import tokens
from portal.kernel.catalog.models import Service
from tests.fixtures.seed import seed_app, seed_fleet

pytestmark = pytest.mark.django_db

SHA = "4f1d2c3b5a6978877665544332211aabbccddeef"
LIST = "/api/v1/gitops"


@pytest.fixture
def api(client, users):
    _, plain = tokens.issue(users["viewer"], "tests")

    def get(url: str, params: dict | None = None, **extra):
        return client.get(url, params or {}, HTTP_AUTHORIZATION=f"Bearer {plain}", **extra)

    return get


def items(api, params: dict | None = None) -> list[dict]:
    response = api(LIST, params)
    assert response.status_code == 200, response.content
    return response.json()["results"]


def by_name(results: list[dict]) -> dict[str, dict]:
    return {item["name"]: item for item in results}


def parse_time(text: str) -> datetime:
    value = datetime.fromisoformat(text)
    assert value.utcoffset() is not None, f"{text} has no offset"
    return value


# --- the item contract ----------------------------------------------------------------

ITEM_FIELDS = {
    "cluster", "environment", "argocd_instance", "tool", "kind", "namespace", "name", "project", "repo_url", "path",
    "chart", "target_revision", "synced_revision", "commit_url", "sync_status", "sync_since", "sync_since_exact",
    "health_status", "health_since", "health_since_exact", "needs_attention", "health_disagreement", "sync_blocked",
    "rule_health", "rule_message", "health_unchecked", "health_not_read", "suggested_health_rules",
    "sync_blocked_until", "sync_window",
    "manual_sync",
    "suspended", "services", "running_versions", "git_pins", "after_change", "cluster_stale_since",
    "cluster_poll_interrupted_at", "portal_url",
    "api_url",
    # every other fact the store holds (issue 21)
    "uid", "destination", "sources", "multi_source", "synced_revisions", "source_revision", "last_attempted_revision",
    "generation", "observed_generation", "images", "ready", "interval", "automated", "history", "helm_release",
    "flux_source", "operation_phase", "operation_message", "operation_started_at", "operation_finished_at",
    "reconciled_at", "health_message", "warnings", "previous_synced_revision", "revision_changed_at", "read_from",
    "first_seen",
}


def test_every_field_of_an_argo_application(api, catalog):
    now = timezone.now()
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.4.2", project="shop",
             namespace="argocd", target_revision="main", synced_revision=SHA, since=timedelta(hours=3), now=now,
             manual_sync=True)
    [item] = items(api)
    assert set(item) == ITEM_FIELDS
    assert item["cluster"] == "prod-eu-1" and item["environment"] == "prod"
    assert (item["tool"], item["kind"], item["namespace"], item["name"]) == ("argo", "Application", "argocd",
                                                                             "checkout-prod")
    assert item["project"] == "shop"
    assert item["repo_url"] == "https://github.com/acme/gitops.git"
    assert (item["path"], item["chart"]) == ("apps/checkout-prod", None)
    assert (item["target_revision"], item["synced_revision"]) == ("main", SHA)
    assert item["commit_url"] == f"https://github.com/acme/gitops/commit/{SHA}"
    assert item["sync_status"] == "Synced" and item["health_status"] == "Healthy"
    assert parse_time(item["sync_since"]) == now - timedelta(hours=3)
    assert parse_time(item["health_since"]) == now - timedelta(hours=3)
    # seed_app stores no tool time: both are the portal's first sight ("at least since").
    assert (item["sync_since_exact"], item["health_since_exact"]) == (False, False)
    assert item["needs_attention"] is False
    assert (item["sync_blocked"], item["sync_blocked_until"], item["sync_window"]) == (False, None, None)
    assert (item["manual_sync"], item["suspended"]) == (True, False)
    assert item["services"] == ["checkout"]
    assert item["running_versions"] == {"checkout": ["1.4.2"]}
    assert item["git_pins"] is None
    assert item["after_change"] is None
    assert item["cluster_stale_since"] is None
    assert item["cluster_poll_interrupted_at"] is None
    assert item["portal_url"] == "http://testserver/services/checkout"
    assert item["api_url"] == "http://testserver/api/v1/gitops/prod-eu-1/argocd/checkout-prod"  # no twin: no qualifier


def test_flux_revision_helm_chart_and_unparseable_repo_give_the_right_commit_links(api, catalog):
    seed_app(catalog.dev_cluster, "flux-git", tool="flux", synced_revision=f"main@sha1:{SHA}",
             sources=[{"repo_url": "https://gitlab.com/acme/deploy.git", "ref": "GitRepository/deploy"}],
             repo_url="https://gitlab.com/acme/deploy.git")
    seed_app(catalog.dev_cluster, "flux-oci", tool="flux", synced_revision="v1@sha256:" + "ab" * 32,
             sources=[{"ref": "OCIRepository/podinfo"}], repo_url="oci://ghcr.io/acme/manifests")
    seed_app(catalog.dev_cluster, "argo-helm", chart="podinfo", path="", synced_revision="6.5.0",
             repo_url="https://stefanprodan.github.io/podinfo")
    seed_app(catalog.dev_cluster, "argo-bad-url", repo_url="javascript:alert(1)//github.com/acme/x")
    found = by_name(items(api))
    assert found["flux-git"]["commit_url"] == f"https://gitlab.com/acme/deploy/-/commit/{SHA}"
    assert found["flux-oci"]["commit_url"] is None
    assert (found["argo-helm"]["chart"], found["argo-helm"]["path"], found["argo-helm"]["commit_url"]) == (
        "podinfo", None, None)
    assert found["argo-bad-url"]["commit_url"] is None


def test_an_app_without_exactly_one_service_links_to_the_filtered_gitops_view(api, catalog):
    seed_app(catalog.prod_us, "infra")
    [item] = items(api)
    assert item["services"] == [] and item["running_versions"] == {}
    url = urlsplit(item["portal_url"])
    assert (url.scheme, url.netloc, url.path) == ("http", "testserver", "/gitops")
    assert parse_qs(url.query) == {"cluster": ["prod-us-1"], "q": ["infra"]}


def test_needs_attention_follows_the_pages_grace_period(api, catalog):
    seed_app(catalog.prod_eu, "degraded-long", health="Degraded", since=timedelta(minutes=25))
    seed_app(catalog.prod_eu, "outofsync-new", sync="OutOfSync", since=timedelta(minutes=3))
    seed_app(catalog.prod_eu, "fine", since=timedelta(days=2))
    found = by_name(items(api))
    assert found["degraded-long"]["needs_attention"] is True
    assert found["outofsync-new"]["needs_attention"] is False
    assert found["fine"]["needs_attention"] is False
    assert [i["name"] for i in items(api, {"needs_attention": "true"})] == ["degraded-long"]
    assert sorted(i["name"] for i in items(api, {"needs_attention": "false"})) == ["fine", "outofsync-new"]


def test_sync_blocked_until_has_an_offset_and_is_null_once_passed(api, catalog):
    now = timezone.now()
    until = now + timedelta(hours=5)
    seed_app(catalog.prod_eu, "frozen", sync="OutOfSync", sync_blocked=True, sync_blocked_until=until,
             sync_window={"kind": "deny", "description": "weekend freeze", "schedule": "0 18 * * 5",
                          "duration": "60h", "time_zone": "Europe/Berlin", "manual_sync_allowed": True})
    seed_app(catalog.prod_eu, "thawed", sync_blocked=True, sync_blocked_until=now - timedelta(minutes=1),
             sync_window={"kind": "deny", "description": "closed already"})
    seed_app(catalog.dev_cluster, "paused", tool="flux", suspended=True, sync_blocked=True,
             sync_window={"kind": "suspend", "description": "spec.suspend: true"})
    seed_app(catalog.prod_us, "broken-window", sync_blocked=True,
             sync_window={"kind": "error", "error": "invalid schedule"})
    found = by_name(items(api))

    frozen = found["frozen"]
    assert frozen["sync_blocked"] is True
    assert frozen["sync_blocked_until"].endswith("+00:00")
    assert parse_time(frozen["sync_blocked_until"]) == until
    assert frozen["sync_window"] == {"kind": "deny", "description": "weekend freeze", "schedule": "0 18 * * 5",
                                     "duration": "60h", "time_zone": "Europe/Berlin", "manual_sync_allowed": True,
                                     "error": ""}

    thawed = found["thawed"]
    assert (thawed["sync_blocked"], thawed["sync_blocked_until"], thawed["sync_window"]) == (False, None, None)

    paused = found["paused"]
    assert (paused["sync_blocked"], paused["sync_blocked_until"], paused["suspended"]) == (True, None, True)
    assert paused["sync_window"]["kind"] == "suspend"
    assert found["broken-window"]["sync_window"]["error"] == "invalid schedule"


def test_every_time_is_iso_8601_with_an_offset(api, catalog):
    from gitops.models import ClusterPoll

    ClusterPoll.objects.create(cluster=catalog.prod_eu, stale_since=timezone.now() - timedelta(minutes=30))
    seed_app(catalog.prod_eu, "stale-app", service=catalog.checkout)
    [item] = items(api)
    for key in ("sync_since", "health_since", "cluster_stale_since"):
        assert item[key].endswith("+00:00"), (key, item[key])
        parse_time(item[key])


# --- after_change ---------------------------------------------------------------------


def change(catalog, cluster, service, old, new, at) -> VersionChange:
    return VersionChange.objects.create(service=service, environment=cluster.environment, cluster=cluster,
                                        from_version=old, to_version=new, at=at)


def test_after_change_is_the_newest_version_change_on_the_cluster_in_the_day_before_it_turned(api, catalog):
    now = timezone.now()
    turned = now - timedelta(minutes=30)
    seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, health="Degraded",
             since=timedelta(minutes=30), now=now)
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, now=now)
    seed_app(catalog.prod_us, "payments-us", service=catalog.payments, health="Missing", since=timedelta(hours=1),
             now=now)
    change(catalog, catalog.prod_eu, catalog.checkout, "1.3.0", "1.4.0", turned - timedelta(hours=26))  # too old
    picked = change(catalog, catalog.prod_eu, catalog.checkout, "1.4.0", "1.5.0", turned - timedelta(hours=2))
    change(catalog, catalog.prod_eu, catalog.payments, "2.0.0", "2.0.1", turned - timedelta(hours=5))  # older
    change(catalog, catalog.prod_eu, catalog.payments, "2.0.1", "2.0.2", turned + timedelta(minutes=5))  # after
    change(catalog, catalog.prod_eu, catalog.payments, "2.0.2", "2.0.3", now)  # long after
    change(catalog, catalog.prod_us, catalog.payments, "9.0.0", "9.0.1", turned - timedelta(hours=3))
    found = by_name(items(api))

    after = found["payments-prod"]["after_change"]
    assert after == {"service": "checkout", "from": "1.4.0", "to": "1.5.0", "at": after["at"], "rollback": None}
    assert after["at"].endswith("+00:00") and parse_time(after["at"]) == picked.at
    assert found["checkout-prod"]["after_change"] is None  # healthy: never
    # payments-us turned missing an hour ago; its cluster's only change was 3 h before that.
    assert found["payments-us"]["after_change"]["to"] == "9.0.1"


def test_after_change_is_null_without_a_change_in_the_day_before(api, catalog):
    now = timezone.now()
    seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, health="Missing",
             since=timedelta(hours=2), now=now)
    change(catalog, catalog.prod_eu, catalog.payments, "1", "2", now - timedelta(hours=2, days=1, minutes=1))
    change(catalog, catalog.prod_us, catalog.payments, "1", "2", now - timedelta(hours=3))
    [item] = items(api)
    assert item["after_change"] is None


# --- filters and sorts ----------------------------------------------------------------


@pytest.fixture
def fleet(catalog):
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout)
    seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, health="Degraded",
             since=timedelta(minutes=40))
    seed_app(catalog.staging_cluster, "payments-staging", service=catalog.payments, sync="OutOfSync",
             since=timedelta(hours=5))
    seed_app(catalog.dev_cluster, "checkout-dev", service=catalog.checkout, tool="flux", health="Progressing",
             since=timedelta(minutes=1))
    return catalog


@pytest.mark.parametrize(("params", "expected"), [
    ({"cluster": "prod-eu-1"}, {"checkout-prod", "payments-prod"}),
    ({"environment": "staging"}, {"payments-staging"}),
    ({"service": "checkout"}, {"checkout-prod", "checkout-dev"}),
    ({"tool": "flux"}, {"checkout-dev"}),
    ({"sync": "OutOfSync"}, {"payments-staging"}),
    ({"health": "Degraded"}, {"payments-prod"}),
    ({"health": "Progressing", "tool": "flux"}, {"checkout-dev"}),
    ({"needs_attention": "true"}, {"payments-prod", "payments-staging"}),
    ({"needs_attention": "false", "service": "checkout"}, {"checkout-prod", "checkout-dev"}),
    ({"cluster": "no-such-cluster"}, set()),
])
def test_filters(api, fleet, params, expected):
    assert {item["name"] for item in items(api, params)} == expected


def test_default_sort_is_problems_first_like_the_page(api, fleet):
    assert [i["name"] for i in items(api)] == ["payments-prod", "payments-staging", "checkout-dev", "checkout-prod"]


@pytest.mark.parametrize(("sort", "expected"), [
    ("name", ["checkout-dev", "checkout-prod", "payments-prod", "payments-staging"]),
    ("-name", ["payments-staging", "payments-prod", "checkout-prod", "checkout-dev"]),
    ("cluster", ["checkout-dev", "checkout-prod", "payments-prod", "payments-staging"]),
    ("environment", ["checkout-dev", "payments-staging", "checkout-prod", "payments-prod"]),
    ("-environment", ["payments-prod", "checkout-prod", "payments-staging", "checkout-dev"]),
    ("sync_since", ["payments-staging", "checkout-prod", "payments-prod", "checkout-dev"]),
    ("-health_since", ["checkout-dev", "payments-prod", "checkout-prod", "payments-staging"]),
])
def test_sorts(api, fleet, sort, expected):
    assert [i["name"] for i in items(api, {"sort": sort})] == expected


@pytest.mark.parametrize(("params", "code", "field"), [
    ({"sort": "uid"}, "invalid_parameters", "sort"),
    ({"tool": "jenkins"}, "invalid_parameters", "tool"),
    ({"health": "degraded"}, "invalid_parameters", "health"),
    ({"needs_attention": "maybe"}, "invalid_parameters", "needs_attention"),
    ({"cluster": "../etc"}, "invalid_parameters", "cluster"),
    ({"page_size": "0"}, "invalid_parameters", "page_size"),
    ({"page_size": "201"}, "invalid_parameters", "page_size"),
    ({"cursor": "not-a-cursor"}, "invalid_cursor", None),
])
def test_invalid_values_are_refused_with_the_error_shape(api, fleet, params, code, field):
    response = api(LIST, params)
    assert response.status_code == 400
    error = response.json()["error"]
    assert set(error) == {"code", "message", "details"}
    assert error["code"] == code and error["message"]
    if field:
        assert field in error["details"]


@pytest.mark.parametrize(("params", "expected"), [
    ({"attention": "true"}, {"payments-prod", "payments-staging"}),
    ({"attention": "1"}, {"payments-prod", "payments-staging"}),  # as the page's checkbox sends it
    ({"attention": "false", "service": "checkout"}, {"checkout-prod", "checkout-dev"}),
    ({"status": "degraded"}, {"payments-prod"}),
    ({"status": "outofsync", "environment": "staging"}, {"payments-staging"}),
    ({"q": "payments"}, {"payments-prod", "payments-staging"}),
    ({"project": "shop"}, set()),
])
def test_the_pages_filter_names_work_here(api, fleet, params, expected):
    assert {item["name"] for item in items(api, params)} == expected


@pytest.mark.parametrize("value", ["true", "false"])
def test_needs_attention_is_an_alias_of_attention(api, fleet, value):
    assert items(api, {"needs_attention": value}) == items(api, {"attention": value})


@pytest.mark.parametrize("name", ["cluster", "q", "attention", "needs_attention", "status", "sort"])
def test_a_blank_value_is_refused_not_read_as_all(api, fleet, name):
    response = api(LIST, {name: ""})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_parameters" and name in error["details"]


@pytest.mark.parametrize("query", [
    "", "sort=name", "sort=-environment", "attention=1", "status=degraded&tool=argo", "q=payments&sort=cluster",
    "health=Progressing", "service=checkout&sort=-sync_since",
])
def test_a_gitops_page_query_string_lists_the_same_apps_in_the_same_order(api, fleet, client, users, query):
    client.force_login(users["viewer"])
    page = client.get("/gitops?" + query)
    assert page.status_code == 200
    on_page = re.findall(r'<tr class="app-row[^"]*" data-app="([^"]+)"', page.content.decode())
    assert on_page
    assert [item["name"] for item in api(LIST + "?" + query).json()["results"]] == on_page


def test_unknown_and_repeated_parameters_are_refused_not_ignored(api, fleet):
    response = api(LIST, {"enviroment": "prod"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "unknown_parameters"
    assert "enviroment" in error["message"]
    assert error["details"]["unknown"] == ["enviroment"] and "environment" in error["details"]["allowed"]

    response = api(LIST + "?tool=argo&tool=flux")
    assert response.status_code == 400 and response.json()["error"]["code"] == "repeated_parameters"


# --- keyset pages ---------------------------------------------------------------------


def walk(api, params: dict, direction: str = "next") -> list[list[str]]:
    pages, response = [], api(LIST, params)
    while True:
        body = response.json()
        pages.append([i["name"] for i in body["results"]])
        if not body[direction]:
            return pages
        response = api(body[direction])


@pytest.mark.parametrize("sort", ["problems", "-name", "sync_since", "-health_since"])
def test_pages_cover_every_app_once_in_order_and_previous_walks_back(api, catalog, sort):
    now = timezone.now()
    for i in range(7):
        seed_app(catalog.prod_eu if i % 2 else catalog.prod_us, f"app-{i}", since=timedelta(minutes=10 * (i % 3)),
                 health="Degraded" if i % 3 == 0 else "Healthy", now=now)
    everything = [i["name"] for i in items(api, {"sort": sort, "page_size": "100"})]
    pages = walk(api, {"sort": sort, "page_size": "3"})
    assert [len(p) for p in pages] == [3, 3, 1]
    assert sum(pages, []) == everything

    last = api(LIST, {"sort": sort, "page_size": "3"}).json()
    last = api(api(last["next"]).json()["next"]).json()
    back = [[i["name"] for i in last["results"]]]
    while last["previous"]:
        last = api(last["previous"]).json()
        back.append([i["name"] for i in last["results"]])
    assert back[::-1] == pages


def test_pages_are_stable_under_inserts(api, catalog):
    for name in ("b", "d", "f", "h"):
        seed_app(catalog.prod_eu, name)
    first = api(LIST, {"sort": "name", "page_size": "2"}).json()
    assert [i["name"] for i in first["results"]] == ["b", "d"]
    # New apps sort before and inside the next page: an offset would repeat "d"; a cursor does not.
    seed_app(catalog.prod_eu, "a")
    seed_app(catalog.prod_eu, "c")
    seed_app(catalog.prod_eu, "e")
    second = api(first["next"]).json()
    assert [i["name"] for i in second["results"]] == ["e", "f"]


def test_a_cursor_from_another_sort_is_refused(api, fleet):
    body = api(LIST, {"sort": "name", "page_size": "1"}).json()
    cursor = parse_qs(urlsplit(body["next"]).query)["cursor"][0]
    response = api(LIST, {"sort": "cluster", "cursor": cursor})
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_cursor"


# --- one application ------------------------------------------------------------------


def test_detail_has_the_list_fields_workloads_and_recent_state_changes(api, catalog):
    app = seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, version="2.5.0", health="Degraded",
                   since=timedelta(minutes=20), health_message="Deployment payments has 0/2 ready")
    at = timezone.now() - timedelta(minutes=20)
    StateChange.objects.create(cluster=catalog.prod_eu, app=app, object_key="k", field="health", old="Healthy",
                               new="Degraded", at=at)
    StateChange.objects.create(cluster=catalog.prod_eu, app=app, object_key="k", field="sync", old="OutOfSync",
                               new="Synced", at=at - timedelta(hours=1))
    listed = api(LIST).json()["results"][0]
    response = api(listed["api_url"])
    assert response.status_code == 200
    detail = response.json()
    assert {k: detail[k] for k in ITEM_FIELDS} == listed
    assert detail["health_message"] == "Deployment payments has 0/2 ready"
    [workload] = detail["workloads"]
    assert workload["kind"] == "Deployment" and workload["name"] == "payments-prod"
    assert (workload["replicas_desired"], workload["replicas_ready"]) == (2, 0)
    assert workload["containers"] == [{"name": "payments-prod", "image": "ghcr.io/acme/payments:2.5.0",
                                       "init": False}]
    assert [(c["field"], c["old"], c["new"]) for c in detail["state_changes"]] == [
        ("health", "Healthy", "Degraded"), ("sync", "OutOfSync", "Synced")]
    assert parse_time(detail["state_changes"][0]["at"]) == at


def test_detail_of_an_ambiguous_name_needs_a_kind(api, catalog):
    seed_app(catalog.dev_cluster, "podinfo", tool="flux", kind="Kustomization", namespace="flux-system")
    seed_app(catalog.dev_cluster, "podinfo", tool="flux", kind="HelmRelease", namespace="flux-system", chart="podinfo")
    url = "/api/v1/gitops/dev-eu-1/flux-system/podinfo"
    response = api(url)
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "ambiguous_name" and "kind" in error["message"]
    assert sorted(error["details"]["kinds"]) == ["HelmRelease", "Kustomization"]
    chosen = api(url, {"kind": "HelmRelease"})
    assert chosen.status_code == 200 and chosen.json()["chart"] == "podinfo"


def test_detail_not_found_and_unknown_api_paths_answer_json(api, catalog):
    for url in ("/api/v1/gitops/prod-eu-1/argocd/nothing", "/api/v1/nothing", "/api/v1/gitops/a/b/c/d",
                "/api/v1/gitops/"):
        response = api(url)
        assert response.status_code == 404, url
        assert response["Content-Type"] == "application/json"
        assert response.json()["error"]["code"] == "not_found"


# --- query counts ---------------------------------------------------------------------


def count_queries(api, params: dict) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = api(LIST, params)
    assert response.status_code == 200
    return len(ctx.captured_queries)


@pytest.mark.parametrize("params", [{}, {"environment": "prod", "needs_attention": "false", "sort": "-sync_since"},
                                    {"service": "svc1", "sort": "name"}])
def test_query_count_does_not_grow_with_the_page(api, catalog, params):
    services = [catalog.checkout, catalog.payments] + [
        Service.objects.create(name=f"svc{i}", image_repository=f"ghcr.io/acme/svc{i}") for i in range(3)
    ]
    seed_fleet([catalog.prod_eu, catalog.prod_us], services, apps_per_cluster=300)
    for cluster in (catalog.prod_eu, catalog.prod_us):
        for service in services:
            change(catalog, cluster, service, "1.0.0", "1.1.0", timezone.now() - timedelta(hours=2))
    api(LIST)  # the token's first use of the minute writes last_used_at; not what is measured here
    small = count_queries(api, {**params, "page_size": "10"})
    large = count_queries(api, {**params, "page_size": "100"})
    assert small == large, f"{small} queries for 10 items, {large} for 100"
    response = api(LIST, {**params, "page_size": "100"})
    assert len(response.json()["results"]) == 100


def test_git_pins_are_null_until_read_then_list_what_git_pins(api, catalog):
    from portal.delivery.models import GitPin

    read = seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0")
    seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments)
    GitPin.objects.create(app=read, service=catalog.checkout, version="1.7.0",
                          path="apps/checkout/overlays/prod/kustomization.yaml", line=8, read_at=timezone.now())
    found = by_name(items(api))
    assert found["checkout-prod"]["git_pins"] == [
        {"service": "checkout", "version": "1.7.0", "path": "apps/checkout/overlays/prod/kustomization.yaml",
         "line": 8}
    ]
    assert found["checkout-prod"]["running_versions"] == {"checkout": ["1.6.0"]}
    assert found["payments-prod"]["git_pins"] is None
    detail = api("/api/v1/gitops/prod-eu-1/argocd/checkout-prod").json()
    assert detail["git_pins"][0]["version"] == "1.7.0"
