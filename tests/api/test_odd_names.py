"""Apps whose names cannot form a URL (issue 19, defect 3): a hand-written manifest without
metadata.namespace, or a name outside what Kubernetes allows. They get no detail link (null in
the API); every page and list that shows them still answers, and the other apps keep theirs."""

from __future__ import annotations

import pytest
from drf_spectacular.generators import SchemaGenerator

from portal.delivery.models import PullRequest
from portal.kernel.accounts import tokens
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db

# (namespace, name) as a manifests-connected cluster can hold them: nothing validated them.
ODD = [
    ("", "checkout-manual"),  # an Application file without metadata.namespace
    ("flux-system", "Weird Name/../x"),
    ("Flux_System", "payments"),
    ("apps", "-leading-dash"),
    ("apps", "x" * 252 + "-"),  # as long as the column allows, ending where a DNS name may not
]


@pytest.fixture
def odd_fleet(catalog):
    good = seed_app(catalog.prod_us, "checkout-prod", service=catalog.checkout, version="1.4.2")
    for i, (namespace, name) in enumerate(ODD):
        service = catalog.checkout if i % 2 == 0 else catalog.payments
        seed_app(catalog.prod_eu, name, namespace=namespace, service=service, tool="argo" if i % 2 == 0 else "flux",
                 version="1.4.1", health="Degraded" if i == 1 else "Healthy")
    PullRequest.objects.create(
        number=7, kind="upgrade", services=["checkout"], environment="prod", clusters=["prod-eu-1"],
        repository="https://github.com/acme/gitops", forge_kind="github", title="checkout 1.4.2",
        branch="portal/7", base_branch="main", state="open", url="https://github.com/acme/gitops/pull/7",
    )
    return good


@pytest.fixture
def api(client, users):
    _, plain = tokens.issue(users["viewer"], "tests")
    return lambda url, params=None: client.get(url, params or {}, HTTP_AUTHORIZATION=f"Bearer {plain}")


def test_the_api_lists_odd_apps_without_a_detail_link_and_keeps_the_others(api, odd_fleet):
    response = api("/api/v1/gitops", {"page_size": 100})
    assert response.status_code == 200, response.content
    items = {(item["namespace"], item["name"]): item for item in response.json()["results"]}
    assert set(items) == {*ODD, ("argocd", "checkout-prod")}
    for key in ODD:
        assert items[key]["api_url"] is None, key
        assert items[key]["portal_url"].startswith("http://testserver/services/"), key
    good = items[("argocd", "checkout-prod")]
    assert good["api_url"] == "http://testserver/api/v1/gitops/prod-us-1/argocd/checkout-prod"  # no twin: no qualifier
    detail = api(good["api_url"])
    assert detail.status_code == 200 and detail.json()["name"] == "checkout-prod"


def test_the_api_filters_over_odd_apps(api, odd_fleet):
    response = api("/api/v1/gitops", {"cluster": "prod-eu-1", "health": "Degraded"})
    assert response.status_code == 200, response.content
    [item] = response.json()["results"]
    assert (item["name"], item["api_url"]) == ("Weird Name/../x", None)


def test_the_schema_says_an_app_may_have_no_api_url():
    spec = SchemaGenerator().get_schema(request=None, public=True)
    api_url = spec["components"]["schemas"]["App"]["properties"]["api_url"]
    assert api_url["format"] == "uri" and api_url["nullable"] is True


def test_pull_requests_answer_beside_odd_apps(api, odd_fleet):
    response = api("/api/v1/pull-requests")
    assert response.status_code == 200, response.content
    assert [pr["number"] for pr in response.json()["results"]] == [7]


# Each page with a sign that the well-formed app (or the odd ones) is still on it.
PAGES = {
    "/": "need attention",
    "/gitops": "checkout-prod",
    "/gitops?cluster=prod-eu-1": "Weird Name/../x",
    "/matrix": "1.4.2",
    "/services/checkout": "checkout-prod",
    "/services/checkout/panels": "checkout-manual",
    "/services/payments": "Weird Name/../x",
    "/delivery": "Delivery",
    "/updates": "change freeze",
}


@pytest.mark.parametrize("url", PAGES)
def test_pages_answer_beside_odd_apps(client, users, odd_fleet, url):
    client.force_login(users["viewer"])
    response = client.get(url)
    assert response.status_code == 200, response.content[:2000]
    assert PAGES[url] in response.content.decode()


def test_the_gitops_page_shows_odd_apps_escaped(client, users, odd_fleet):
    client.force_login(users["viewer"])
    body = client.get("/gitops", {"cluster": "prod-eu-1"}).content.decode()
    assert "Weird Name/../x" in body and "checkout-manual" in body
    assert 'href="/api/v1/gitops/prod-eu-1/' not in body


def test_argocd_has_no_page_for_an_app_without_namespace(settings):
    from portal.kernel.links import argocd_app_url

    settings.PORTAL_ARGOCD_URL = "https://argocd.example.com"
    assert argocd_app_url("", "checkout-manual") is None
    assert argocd_app_url("argocd", "checkout") == "https://argocd.example.com/applications/argocd/checkout"
