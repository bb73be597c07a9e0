"""Management commands people run: poll now, load the demo, the demo admin."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from gitops.models import GitOpsApp
from portal.kernel.catalog.models import Cluster

pytestmark = pytest.mark.django_db


def test_load_demo_then_poll_prints_a_summary_per_cluster():
    out = StringIO()
    call_command("load_demo", "--no-collect", stdout=out)
    assert "3 environments, 8 clusters, 12 services" in out.getvalue()  # 5 standalone + the hub and 2 destinations
    assert not GitOpsApp.objects.exists()
    out = StringIO()
    call_command("poll", "prod-eu-1", stdout=out)
    line = out.getvalue().splitlines()[0]
    assert line.startswith("prod-eu-1: 12 apps (+12 ~0 -0)") and " workloads," in line
    assert GitOpsApp.objects.filter(cluster__name="prod-eu-1").count() == 12


def test_poll_reports_a_failed_cluster_and_exits_non_zero():
    call_command("load_demo", "--no-collect", stdout=StringIO())
    Cluster.objects.filter(name="prod-eu-1").update(manifests_path="/nonexistent/folder")
    out = StringIO()
    with pytest.raises(CommandError, match="1 of 1 cluster polls failed"):
        call_command("poll", "prod-eu-1", stdout=out)
    assert "FAILED not_found" in out.getvalue() and "last good data kept" in out.getvalue()


def test_unknown_cluster_is_an_error():
    with pytest.raises(CommandError, match="no such cluster: nope"):
        call_command("poll", "nope")


def test_demo_admin_only_in_demo_mode(settings):
    settings.DEMO_MODE = False
    with pytest.raises(CommandError, match="only created when PORTAL_DEMO=1"):
        call_command("ensure_demo_admin")
    settings.DEMO_MODE = True
    out = StringIO()
    call_command("ensure_demo_admin", stdout=out)
    assert "log in at http://127.0.0.1:8000/accounts/login/ as admin" in out.getvalue()
    # Served elsewhere, it says where (the base URL the embedded run derives from its address).
    settings.PORTAL_BASE_URL = "http://127.0.0.1:8765"
    out = StringIO()
    call_command("ensure_demo_admin", stdout=out)
    assert "log in at http://127.0.0.1:8765/accounts/login/ as admin" in out.getvalue()


def test_the_demo_gets_its_registry_snapshot_and_offers_upgrades(settings, client):
    from django.contrib.auth import get_user_model

    from portal.delivery.upgrades import behind
    from portal.kernel.accounts.roles import Role, grant
    from portal.releases.models import Release

    settings.DEMO_MODE = False
    with pytest.raises(CommandError, match="for the demo"):
        call_command("load_demo_releases", stdout=StringIO())

    settings.DEMO_MODE = True
    call_command("load_demo", stdout=StringIO())
    out = StringIO()
    call_command("load_demo_releases", stdout=out)
    call_command("load_demo_releases", stdout=StringIO())  # again: nothing doubles
    assert "tags of 10 services" in out.getvalue()
    assert Release.objects.filter(service__name="checkout", tag="3.4.1").count() == 1
    assert Release.objects.get(service__name="checkout", tag="4.0.0-rc.1").prerelease

    lines = {(b.app.name, b.target) for b in behind()}
    assert ("checkout-prod", "3.4.1") in lines  # prod runs 3.3.x; 3.4.1 is the newest (default policy)
    user = get_user_model().objects.create_user("mara")
    grant(user, Role.MEMBER)
    client.force_login(user)
    assert "Open PR → 3.4.1" in client.get("/updates").content.decode()
    assert "Open PR → 3.4.1" in client.get("/matrix").content.decode()


def test_load_demo_reads_a_destination_listed_before_its_hub_again(tmp_path):
    from pathlib import Path

    from gitops.models import Workload

    clusters = Path(__file__).resolve().parents[2] / "examples" / "clusters"
    fleet = tmp_path / "fleet.yaml"
    # The destination sorts before the hub: read first, its workloads find no hub app yet.
    fleet.write_text(
        "environments: [{name: prod, order: 3, production: true}]\n"
        "clusters:\n"
        f"  - {{name: a-prod-eu-2, environment: prod, manifests: {clusters / 'prod-eu-2'},\n"
        "     argocd_aliases: ['https://prod-eu-2.k8s.acme-shop.internal:6443']}\n"
        f"  - {{name: z-hub, environment: prod, manifests: {clusters / 'mgmt-hub'}}}\n"
        "services: [{name: checkout, image: ghcr.io/acme-shop/checkout, team: checkout}]\n"
    )
    out = StringIO()
    call_command("load_demo", "--fleet", str(fleet), stdout=out)
    assert out.getvalue().count("a-prod-eu-2:") == 2  # read again after the hub
    workload = Workload.objects.get(cluster__name="a-prod-eu-2", name="checkout")
    assert workload.app is not None and workload.app.name == "checkout-prod-eu-2"
