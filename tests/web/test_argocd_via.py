"""Which Argo CD manages an app, on /gitops rows and the service page's panels: "via Argo CD
<instance>" linking to that instance's UI when one is set; the app's deep link in the same UI,
falling back to PORTAL_ARGOCD_URL. A Flux app names no Argo CD."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from gitops.models import GitOpsApp
from portal.kernel.catalog.models import ArgoCDInstance, Cluster
from tests.gitops.test_topology_poll import hub_fleet, poll_named  # noqa: F401 - the fixture

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("hub_fleet")]


def row_of(page: str, app: str) -> str:
    match = re.search(rf'<tr class="app-row[^"]*" data-app="{app}">(.*?)</tr>', page, re.DOTALL)
    assert match, app
    return match.group(1)


def panel_of(page: str, app: str) -> str:
    match = re.search(rf'<section class="panel[^"]*" data-app="{app}"[^>]*>(.*?)</section>', page, re.DOTALL)
    assert match, app
    return match.group(1)


def test_gitops_rows_name_the_hub_instance_and_link_its_ui(client, users):
    poll_named("hub")
    client.force_login(users["viewer"])
    page = client.get(reverse("gitops")).content.decode()
    prod = row_of(page, "checkout-prod")
    assert 'via Argo CD <a href="https://argocd.hub.example"' in prod and ">hub-argocd</a>" in prod
    assert 'href="https://argocd.hub.example/applications/argocd/checkout-prod"' in prod
    # The app sits under its destination, the instance says who deploys it there.
    assert "prod-eu-1" in prod
    # An agent's app: the same hub instance, its deep link under the agent's namespace.
    assert 'href="https://argocd.hub.example/applications/edge-1/checkout-edge"' in row_of(page, "checkout-edge")


def test_service_panels_name_the_instance_and_deep_link_into_it(client, users):
    poll_named("hub")
    client.force_login(users["viewer"])
    page = client.get(reverse("service", args=["checkout"])).content.decode()
    prod = panel_of(page, "checkout-prod")
    assert 'data-argocd-instance="hub-argocd"' in prod
    assert 'via Argo CD <a href="https://argocd.hub.example"' in prod
    assert 'href="https://argocd.hub.example/applications/argocd/checkout-prod"' in prod
    # The panel refresh (htmx) renders the same.
    panels = client.get(reverse("service-panels", args=["checkout"])).content.decode()
    assert 'via Argo CD <a href="https://argocd.hub.example"' in panel_of(panels, "checkout-prod")


def test_without_an_instance_ui_the_name_is_plain_and_app_links_use_the_default(client, users, settings):
    settings.PORTAL_ARGOCD_URL = "https://argocd.default.example/"
    ArgoCDInstance.objects.filter(name="hub-argocd").update(ui_url="")
    poll_named("hub")
    client.force_login(users["viewer"])
    prod = row_of(client.get(reverse("gitops")).content.decode(), "checkout-prod")
    assert re.search(r"via Argo CD\s*hub-argocd</span>", prod)
    assert 'href="https://argocd.default.example/applications/argocd/checkout-prod"' in prod
    panel = panel_of(client.get(reverse("service", args=["checkout"])).content.decode(), "checkout-prod")
    assert re.search(r"via Argo CD\s*hub-argocd</span>", panel)
    assert 'href="https://argocd.default.example/applications/argocd/checkout-prod"' in panel
    # An instance UI that is no http(s) URL is never a link (the admin field is a URLField; the
    # database may still hold anything).
    ArgoCDInstance.objects.filter(name="hub-argocd").update(ui_url="javascript:alert(1)")
    prod = row_of(client.get(reverse("gitops")).content.decode(), "checkout-prod")
    assert "javascript:" not in prod and "via Argo CD" in prod


def test_a_flux_app_names_no_argo_cd(client, users):
    poll_named("hub")
    hub = Cluster.objects.get(name="hub")
    GitOpsApp.objects.create(cluster=hub, read_from=hub, tool="flux", kind="Kustomization", namespace="flux-system",
                             name="infra", repo_url="https://github.com/acme/infra.git")
    client.force_login(users["viewer"])
    assert "via Argo CD" not in row_of(client.get(reverse("gitops")).content.decode(), "infra")
