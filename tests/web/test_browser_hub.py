"""The hub demo as `make run` serves it, in headless Chromium: one Argo CD on mgmt-hub deploys
to prod-eu-2 (a cluster the portal reads too), prod-sa-1 (in the catalog, not read) and dev-eu-2
(in no catalog: an unregistered destination). One test per page, each looking at what a person
sees there; screenshots go to test-artifacts/hub-*.png.

The demo is the real one (`load_demo` on examples/fleet.yaml and its folders); what the pages
must show follows from examples/clusters/mgmt-hub (see examples/README.md, "Two shapes").
"""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from gitops import kinds
from gitops.models import GitOpsApp
from portal.kernel.accounts.roles import Role, grant
from portal.kernel.catalog.models import Cluster, Service
from tests.fixtures.browser import screenshot, submit_login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "hub-admin-pass-123"
FREEZE = "Launch freeze: prod-sa-1"


@pytest.fixture
def hub_demo(live_server, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    # "Add" on /clusters queues a poll of the hub: run here, in the server's thread.
    settings.CELERY_TASK_ALWAYS_EAGER = True
    call_command("load_demo", stdout=StringIO())
    user = get_user_model().objects.create_user("ines", password=PASSWORD)
    grant(user, Role.ADMIN)
    return live_server


def login(page, server) -> None:
    submit_login(page, server.url, "ines", PASSWORD)


def environment_cells(page, service: str) -> dict[str, object]:
    """The matrix row of `service`: its cells by environment (the header's column names)."""
    headers = [h.strip() for h in page.locator("table.matrix thead th").all_inner_texts()][1:]
    cells = page.locator(f"table.matrix tr[data-service={service}] td.cell")
    return {env: cells.nth(i) for i, env in enumerate(headers)}


def cluster_titles(cell) -> str:
    return " ".join(line.get_attribute("title") or "" for line in cell.locator(".cell-line").all())


def test_matrix_files_hub_apps_under_their_destinations_environment(page, hub_demo):
    login(page, hub_demo)
    page.goto(f"{hub_demo.url}/matrix")
    cells = environment_cells(page, "checkout")
    # Both destinations of the hub are prod clusters: their checkout (3.3.1) counts in prod…
    prod = cluster_titles(cells["prod"])
    assert "prod-eu-2" in prod and "prod-sa-1" in prod
    # …never under the hub itself, and the unregistered dev-eu-2 counts in no environment yet.
    page_text = page.locator("table.matrix").inner_text()
    assert "mgmt-hub" not in " ".join(cluster_titles(c) for c in cells.values())
    assert "dev-eu-2" not in cluster_titles(cells["dev"])
    assert "dev-eu-2" not in page_text
    # frontend runs on prod-sa-1 only through the hub: Argo CD's summary.images is all there is.
    assert "prod-sa-1" in cluster_titles(environment_cells(page, "frontend")["prod"])
    screenshot(page, "hub-matrix")


def test_gitops_lists_a_hub_app_with_its_destination_and_the_hub_projects_sync_window(page, hub_demo):
    login(page, hub_demo)
    page.goto(f"{hub_demo.url}/gitops?cluster=prod-sa-1")
    row = page.locator("tr.app-row[data-app=checkout-prod-sa-1]")
    assert row.count() == 1
    assert "prod-sa-1" in row.inner_text() and "prod" in row.inner_text()
    # The deny window lives in the hub's AppProject `regions` and holds every app on prod-sa-1.
    badge = row.locator(".badge.window")
    assert badge.count() == 1 and FREEZE in (badge.get_attribute("title") or "")
    assert page.locator("tr.app-row").count() == 4
    screenshot(page, "hub-gitops")
    # The same project's apps on prod-eu-2 are not held: the window names prod-sa-1's server only.
    page.goto(f"{hub_demo.url}/gitops?cluster=prod-eu-2")
    rows = page.locator("tr.app-row")
    assert rows.count() == 4
    assert page.locator("tr.app-row .badge.window").count() == 0


def test_service_panel_says_where_the_versions_of_each_hub_app_come_from(page, hub_demo):
    login(page, hub_demo)
    page.goto(f"{hub_demo.url}/services/checkout")
    unread = page.locator("section.panel[data-app=checkout-prod-sa-1]")
    unread.wait_for()
    assert "versions as Argo CD reports them" in unread.inner_text()
    assert "3.3.1" in unread.inner_text()
    # prod-eu-2 is read: its Deployment refines the app (replicas, the exact workload).
    read = page.locator("section.panel[data-app=checkout-prod-eu-2]")
    assert "versions as Argo CD reports them" not in read.inner_text()
    assert "Deployment checkout/checkout" in read.inner_text() and "3/3 ready" in read.inner_text()
    unread.scroll_into_view_if_needed()
    screenshot(page, "hub-service-panel")


def test_clusters_page_offers_the_unregistered_destination_and_adds_it_in_one_click(page, hub_demo):
    login(page, hub_demo)
    page.goto(f"{hub_demo.url}/clusters")
    row = page.locator("tr[data-discovered=dev-eu-2]")
    assert "unregistered destination dev-eu-2" in row.inner_text()
    assert row.locator("td").nth(1).inner_text().strip() == "2"  # checkout and loyalty
    # Suggested from its name.
    assert row.locator("select[name=environment]").input_value() == "dev"
    screenshot(page, "hub-clusters")
    row.locator("button", has_text="Add").click()
    page.wait_for_url(f"{hub_demo.url}/clusters")
    assert page.locator("tr[data-discovered]").count() == 0
    added = Cluster.objects.get(name="dev-eu-2")
    assert (added.environment.name, added.discovered) == ("dev", False)
    # The hub was read again (eager here, queued in `make run`): its checkout counts in dev now.
    assert GitOpsApp.objects.get(name="checkout-dev-eu-2").running == {"checkout": ["3.4.0"]}
    page.goto(f"{hub_demo.url}/matrix")
    assert "dev-eu-2" in cluster_titles(environment_cells(page, "checkout")["dev"])


def test_discovery_lists_the_unclaimed_image_and_adds_it_as_a_service(page, hub_demo):
    login(page, hub_demo)
    page.goto(f"{hub_demo.url}/discovery")
    row = page.locator("tr[data-image='ghcr.io/acme-shop/loyalty']")
    assert page.locator("tr[data-image]").count() == 1
    cells = row.locator("td")
    assert cells.nth(2).inner_text().strip() == "3" and cells.nth(3).inner_text().strip() == "3"
    assert row.locator("input[name='name:ghcr.io/acme-shop/loyalty']").input_value() == "loyalty"
    assert "prod-sa-1/argocd/loyalty-prod-sa-1" in row.locator(".claims").inner_text()
    screenshot(page, "hub-discovery")
    row.locator("input[type=checkbox]").check()
    page.locator("button[name=action][value=add]").click()
    page.wait_for_load_state()
    assert Service.objects.filter(name="loyalty", image_repository="ghcr.io/acme-shop/loyalty").exists()
    assert page.locator("tr[data-image='ghcr.io/acme-shop/loyalty']").count() == 0
    # The matrix fills: loyalty 0.3.2 in prod, on the read destination and the unread one.
    page.goto(f"{hub_demo.url}/matrix")
    prod = environment_cells(page, "loyalty")["prod"]
    assert "0.3.2" in prod.inner_text()
    titles = cluster_titles(prod)
    assert "prod-eu-2" in titles and "prod-sa-1" in titles
    screenshot(page, "hub-matrix-after-discovery")


# --- Tried as a new user would (README, "Tried as a new user would") --------------------------


@pytest.fixture
def new_user(live_server, settings, tmp_path, kube_emulator):
    """No fleet file, no catalog: a superuser, and a kubeconfig context for the hub, whose API
    (the emulator) serves what mgmt-hub's `kubectl get -o yaml` would print."""
    import yaml

    settings.CELERY_TASK_ALWAYS_EAGER = True
    folder = Path(settings.BASE_DIR) / "examples" / "clusters" / "mgmt-hub"
    for path in sorted(folder.rglob("*.yaml")):
        kube_emulator.add_all(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    for spec in kinds.KINDS:
        kube_emulator.install(spec.api_version(spec.versions[0]), spec.plural, spec.kind)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "mgmt-hub",
        "clusters": [{"name": "mgmt-hub", "cluster": {"server": kube_emulator.url}}],
        "users": [{"name": "portal-reader", "user": {"token": kube_emulator.token}}],
        "contexts": [{"name": "mgmt-hub", "context": {"cluster": "mgmt-hub", "user": "portal-reader"}}],
    }))
    get_user_model().objects.create_superuser("ines", "ines@example.com", PASSWORD)
    return live_server, kubeconfig


def admin_add(page, server, model: str, fields: dict[str, str], selects: dict[str, str] = {},  # noqa: B006
              checks: tuple[str, ...] = ()) -> None:
    page.goto(f"{server.url}/admin/catalog/{model}/add/")
    for name, value in fields.items():
        page.fill(f"input[name={name}]", value)
    for name, value in selects.items():
        page.select_option(f"select[name={name}]", label=value)
    for name in checks:
        page.check(f"input[name={name}]")
    page.click("input[name=_save]")
    page.wait_for_url(f"{server.url}/admin/catalog/{model}/")


def test_a_new_user_adds_the_hub_then_its_destinations_and_services_and_the_matrix_fills(page, new_user):
    server, kubeconfig = new_user
    login(page, server)
    # 1. Environments, then the hub as a cluster reached through a kubeconfig context.
    for name, order in (("dev", "1"), ("staging", "2"), ("prod", "3")):
        admin_add(page, server, "environment", {"name": name, "order": order},
                  checks=("production",) if name == "prod" else ())
    admin_add(page, server, "cluster",
              {"name": "mgmt-hub", "kubeconfig_path": str(kubeconfig), "kubeconfig_context": "mgmt-hub"},
              {"environment": "prod", "connection": "kubeconfig context"})
    # 2. Poll it now (or wait for the next minute's poll).
    page.goto(f"{server.url}/clusters")
    page.locator("form[action='/clusters/mgmt-hub/poll'] button").click()
    page.wait_for_url(f"{server.url}/clusters")
    # 3. Its destinations are listed with their app counts and a suggested environment.
    rows = page.locator("tr[data-discovered]")
    found = {r.get_attribute("data-discovered"): r for r in rows.all()}
    assert len(found) == 3, list(found)
    suggested = {name: r.locator("select[name=environment]").input_value() for name, r in found.items()}
    counts = {name: r.locator("td").nth(1).inner_text().strip() for name, r in found.items()}
    assert sorted(suggested.values()) == ["dev", "prod", "prod"], suggested
    assert sorted(counts.values()) == ["2", "4", "4"], counts
    screenshot(page, "hub-new-user-clusters")
    for _ in range(3):  # Add, one click each; the page reloads without the added one
        page.locator("tr[data-discovered] button", has_text="Add").first.click()
        page.wait_for_url(f"{server.url}/clusters")
    assert page.locator("tr[data-discovered]").count() == 0
    # 4. Every image they run is unclaimed: add them all as services at once.
    page.goto(f"{server.url}/discovery")
    images = page.locator("tr[data-image]")
    assert sorted(r.get_attribute("data-image") for r in images.all()) == [
        f"ghcr.io/acme-shop/{s}" for s in ("cart", "catalog", "checkout", "frontend", "loyalty")]
    for box in page.locator("tr[data-image] input[type=checkbox]").all():
        box.check()
    screenshot(page, "hub-new-user-discovery")
    page.locator("button[name=action][value=add]").click()
    page.wait_for_load_state()
    assert page.locator("tr[data-image]").count() == 0
    # 5. The matrix fills: each service under its destinations' environment.
    page.goto(f"{server.url}/matrix")
    checkout = environment_cells(page, "checkout")
    assert "3.3.1" in checkout["prod"].inner_text() and "3.4.0" in checkout["dev"].inner_text()
    loyalty = environment_cells(page, "loyalty")
    assert "0.3.2" in loyalty["prod"].inner_text() and "0.4.0" in loyalty["dev"].inner_text()
    screenshot(page, "hub-new-user-matrix")
