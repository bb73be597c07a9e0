"""An application whose pins have no known Git location gets the reason, never an "Open PR" button.

One answer (`portal.delivery.change_builders.no_pr_reason[s]`, from `gitops.git_locations.pin_source`) on
Updates, Delivery, the matrix and the service page, and the preview refuses with the same words.
The app here is the demo's Flux HelmRelease `notifications` as prod-us-1 holds it, minus the
`kustomize.toolkit.fluxcd.io` labels that name the Kustomization that applied it: its chart
comes from a Helm repository, which is not where its values live.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from django.urls import reverse
from django.utils import timezone

from portal.delivery.change_builders import no_pr_reason, no_pr_reasons
from portal.kernel.catalog.models import Service
from portal.releases.models import Release
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db

HELM = Path(__file__).resolve().parents[2] / "examples" / "clusters" / "prod-us-1" / "flux-system" / "helm.yaml"
CHARTS = "https://charts.acme-shop.io"
REASON = "carries no kustomize.toolkit.fluxcd.io/name label"


def unlabelled_release() -> dict:
    raw = next(d for d in yaml.safe_load_all(HELM.read_text()) if d and d["kind"] == "HelmRelease"
               and d["metadata"]["name"] == "notifications")
    raw["metadata"]["labels"] = {k: v for k, v in raw["metadata"].get("labels", {}).items()
                                 if not k.startswith("kustomize.toolkit.fluxcd.io/")}
    return raw


@pytest.fixture
def fleet(catalog):
    service = Service.objects.create(name="notifications", image_repository="ghcr.io/acme-shop/notifications")
    for tag in ("0.8.4", "0.9.0"):
        Release.objects.create(service=service, tag=tag, version=tag, seen_at=timezone.now())
    # Staging runs 0.9.0 from Git; production's HelmRelease runs 0.8.4 and has no Git location.
    staging = seed_app(catalog.staging_cluster, "notifications-staging", service=service, version="0.9.0",
                       tool="flux", repo_url="https://github.com/acme-shop/gitops.git",
                       path="./apps/notifications/overlays/staging")
    prod = seed_app(catalog.prod_eu, "notifications", service=service, version="0.8.4", tool="flux",
                    kind="HelmRelease", namespace="notifications", repo_url=CHARTS, path="", chart="notifications",
                    target_revision="0.3.1", raw=unlabelled_release(),
                    sources=[{"repo_url": CHARTS, "path": "", "chart": "notifications", "target_revision": "0.3.1",
                              "ref": "HelmRepository/flux-system/acme-charts"}])
    return {"service": service, "staging": staging, "prod": prod}


def member(client, users):
    client.force_login(users["member"])
    return client


def test_one_answer_for_one_app_and_many(fleet):
    prod, staging = fleet["prod"], fleet["staging"]
    assert REASON in no_pr_reason(prod) and no_pr_reason(staging) == ""
    assert no_pr_reasons([prod.pk, staging.pk]) == {prod.pk: no_pr_reason(prod)}


def test_updates_shows_the_reason_and_no_button_or_tick(client, users, fleet):
    html = member(client, users).get(reverse("updates")).content.decode()
    row = html[html.index('data-app="notifications" data-target="0.9.0"'):]
    row = row[: row.index("</tr>")]
    assert "No pull request:" in row and REASON in row
    assert "Open PR" not in row and 'name="item"' not in row


def test_delivery_shows_the_reason_instead_of_open_pr_to_prod(client, users, fleet):
    html = member(client, users).get(reverse("delivery")).content.decode()
    row = html[html.index('<tr class="promotion" data-service="notifications">'):]
    row = row[: row.index("</tr>")]
    assert "No pull request:" in row and REASON in row
    assert 'class="button-link promote"' not in row and "Open PR → prod" not in row


def test_the_matrix_says_no_git_location_instead_of_open_pr(client, users, fleet):
    html = member(client, users).get(reverse("matrix")).content.decode()
    assert 'class="muted no-pr"' in html and REASON in html
    assert "Open PR → 0.9.0" not in html


def test_the_service_page_shows_the_reason(client, users, fleet):
    html = member(client, users).get(reverse("service", args=["notifications"])).content.decode()
    assert "No pull request:" in html and REASON in html
    assert "Open PR → 0.9.0" not in html


def test_the_preview_refuses_with_the_same_reason(client, users, fleet):
    prod = fleet["prod"]
    url = reverse("pr-preview") + f"?kind=upgrade&service=notifications&app={prod.pk}&to=0.9.0"
    response = member(client, users).get(url)
    assert response.status_code == 400 and REASON in response.content.decode()


def test_with_its_kustomization_known_the_button_is_back(client, users, fleet, catalog):
    prod = fleet["prod"]
    prod.raw["metadata"]["labels"] = {"kustomize.toolkit.fluxcd.io/name": "notifications",
                                      "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
    prod.save(update_fields=["raw"])
    seed_app(catalog.prod_eu, "notifications", tool="flux", namespace="flux-system",
             repo_url="https://github.com/acme-shop/gitops.git", path="./apps/notifications/overlays/prod")
    html = member(client, users).get(reverse("updates")).content.decode()
    row = html[html.index('data-app="notifications" data-target="0.9.0"'):]
    assert "Open PR → 0.9.0" in row[: row.index("</tr>")]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_updates_in_a_browser_shows_the_reason(page, live_server, fleet):

    from tests.fixtures.browser import log_in_as_member, screenshot

    log_in_as_member(page, live_server.url)
    page.goto(f"{live_server.url}/updates")
    row = page.locator('tr[data-app="notifications"][data-target="0.9.0"]')
    assert REASON in row.locator(".no-pr").inner_text()
    assert row.locator("a.open-pr").count() == 0
    screenshot(page, "updates-no-git-location")
