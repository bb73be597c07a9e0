"""Issue 41: one canonical address per GitOps app in the API.

Two Argo CD instances (a hub and one on the target cluster itself) each hold an Application
argocd/payments deploying to prod-eu-1: /api/v1/gitops/prod-eu-1/argocd/payments once answered
409 "add ?kind=" though the kinds were the same, and neither app could be addressed.
"""

from __future__ import annotations

import pytest

from gitops.models import Finding
from portal.api.mcp import tools
from portal.api.mcp.api_pages import Caller
from portal.kernel.accounts import tokens
from portal.kernel.catalog.models import ArgoCDInstance, Cluster
from tests.api.test_gitops import items
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db

PATH = "/api/v1/gitops/prod-eu-1/argocd/payments"


@pytest.fixture
def api(client, users):
    _, plain = tokens.issue(users["viewer"], "tests")
    return lambda url, params=None: client.get(url, params or {}, HTTP_AUTHORIZATION=f"Bearer {plain}")


@pytest.fixture
def twins(catalog):
    """payments on prod-eu-1 from its own Argo CD and from a hub's; checkout once, from the hub."""
    hub = Cluster.objects.create(name="hub", environment=catalog.prod, connection=Cluster.Connection.MANIFESTS)
    local = ArgoCDInstance.objects.create(name="local-argocd", cluster=catalog.prod_eu)
    central = ArgoCDInstance.objects.create(name="central-argocd", cluster=hub)
    on_target = seed_app(catalog.prod_eu, "payments", path="apps/payments-local", argocd_instance=local)
    from_hub = seed_app(catalog.prod_eu, "payments", path="apps/payments-hub", read_from=hub, argocd_instance=central)
    alone = seed_app(catalog.prod_eu, "checkout", read_from=hub, argocd_instance=central)
    return on_target, from_hub, alone


def test_each_instance_s_app_is_reachable_at_its_own_address(api, twins):
    listed = {item["path"]: item["api_url"] for item in items(api, {"cluster": "prod-eu-1"})}
    assert listed["apps/payments-local"] == f"http://testserver{PATH}?read_from=prod-eu-1"
    assert listed["apps/payments-hub"] == f"http://testserver{PATH}?read_from=hub"
    # An app no twin shares its path with keeps the short address.
    assert listed["apps/checkout"] == "http://testserver/api/v1/gitops/prod-eu-1/argocd/checkout"
    for path, url in listed.items():
        response = api(url)
        assert response.status_code == 200, response.content
        assert response.json()["path"] == path and response.json()["api_url"] == url
    # The instance's name is an alternative address.
    for instance, path in (("local-argocd", "apps/payments-local"), ("central-argocd", "apps/payments-hub")):
        response = api(PATH, {"instance": instance})
        assert response.status_code == 200 and response.json()["path"] == path


def test_the_409_lists_every_address_of_each_candidate(api, twins):
    response = api(PATH)
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "ambiguous_name" and "read_from" in error["message"]
    candidates = {c["read_from"]: c for c in error["details"]["candidates"]}
    assert candidates["hub"]["instance"] == "central-argocd"
    assert candidates["hub"]["addresses"] == [f"http://testserver{PATH}?read_from=hub",
                                              f"http://testserver{PATH}?instance=central-argocd"]
    assert candidates["prod-eu-1"]["addresses"] == [f"http://testserver{PATH}?read_from=prod-eu-1",
                                                    f"http://testserver{PATH}?instance=local-argocd"]
    for candidate in candidates.values():
        for url in candidate["addresses"]:
            assert api(url).json()["read_from"] == candidate["read_from"]
    # ?kind= alone cannot choose: both are Applications.
    assert api(PATH, {"kind": "Application"}).status_code == 409
    assert api(PATH, {"read_from": "nowhere"}).status_code == 404


def test_kinds_and_instances_sharing_a_path_are_qualified_by_both_only_where_needed(api, catalog, twins):
    seed_app(catalog.prod_eu, "payments", tool="flux", kind="Kustomization", namespace="argocd")
    listed = {(i["kind"], i["read_from"]): i["api_url"] for i in items(api, {"cluster": "prod-eu-1"})
              if i["name"] == "payments"}
    assert listed[("Kustomization", "prod-eu-1")] == f"http://testserver{PATH}?kind=Kustomization"
    assert listed[("Application", "hub")] == f"http://testserver{PATH}?kind=Application&read_from=hub"
    for (kind, read_from), url in listed.items():
        answer = api(url).json()
        assert (answer["kind"], answer["read_from"]) == (kind, read_from)


def test_findings_link_each_twin_to_its_own_address(api, twins):
    on_target, from_hub, _ = twins
    for app in (on_target, from_hub):
        Finding.objects.create(app=app, rule="self-heal-off", message="m")
    response = api("/api/v1/findings")
    assert response.status_code == 200, response.content
    urls = sorted(f["app_url"] for f in response.json()["results"])
    assert urls == [f"http://testserver{PATH}?read_from=hub", f"http://testserver{PATH}?read_from=prod-eu-1"]


def test_mcp_names_each_twin_by_the_same_identity_and_takes_it_back(twins, users):
    caller = Caller(tokens.issue(users["viewer"], "assistant")[1], host="testserver")
    names = sorted(app["app"] for app in tools.gitops(caller, {"cluster": "prod-eu-1"})["apps"])
    assert names == ["prod-eu-1/argocd/checkout", "prod-eu-1/argocd/payments?read_from=hub",
                     "prod-eu-1/argocd/payments?read_from=prod-eu-1"]
    one = tools.why_not_deployed(caller, app="prod-eu-1/argocd/payments?read_from=hub")["apps"]
    assert [a["app"] for a in one] == ["prod-eu-1/argocd/payments?read_from=hub"]
    both = tools.why_not_deployed(caller, app="prod-eu-1/argocd/payments")["apps"]
    assert len(both) == 2
