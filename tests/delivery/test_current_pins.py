"""Git pins: read from the repository over real HTTP (GitHub fake) or the demo Git repository,
stored per application, shown as "Git pins X, runs Y", and kept when a read fails."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from forges.demo import DemoForge, build_demo_repo
from portal.delivery.current_pins import due_batches, git_pins, pin_summary, read_app_pins
from portal.delivery.models import GitPin, GitPinRead
from portal.delivery.tasks import read_due_git_pins
from portal.kernel.catalog.models import Service
from tests.fakes.forges.harness import serving
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db

PROD = "apps/checkout/overlays/prod"


@pytest.fixture
def github(monkeypatch):
    with serving("github", monkeypatch) as harness:
        yield harness


def test_pins_are_read_from_the_followed_branch_and_stored(catalog, github):
    app = seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.5.0",
                   repo_url=github.repository, path=PROD, target_revision="HEAD")
    other = Service.objects.create(name="unrelated", image_repository="ghcr.io/acme/unrelated")

    report = read_app_pins(app)

    assert report.ok, report.error
    # What `kustomize build` of the overlay renders: its `images:` entry over the base's untagged
    # image. values.yaml and migrations.yaml sit in the folder, but the overlay does not include them.
    assert git_pins(app) == [
        {"service": "checkout", "version": "1.6.0", "path": f"{PROD}/kustomization.yaml", "line": 7},
    ]
    assert not GitPin.objects.filter(service=other).exists()
    status = GitPinRead.objects.get(app=app)
    assert status.branch == "main" and status.last_error == "" and status.last_ok_at is not None
    # Only reads: the portal never writes to read pins.
    assert {method for method, _path, _status in github.server.log} == {"GET"}


def test_a_failed_read_is_recorded_and_keeps_the_pins_already_stored(catalog, github, monkeypatch):
    app = seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.5.0",
                   repo_url=github.repository, path=PROD)
    assert read_app_pins(app).ok
    monkeypatch.delenv("PORTAL_GITOPS_TOKEN")
    monkeypatch.setattr(settings, "PORTAL_GITOPS_TOKEN", "")

    report = read_app_pins(app)

    assert not report.ok and "set PORTAL_GITOPS_TOKEN" in report.error and "write" not in report.error
    assert GitPinRead.objects.get(app=app).last_error == report.error
    assert GitPin.objects.filter(app=app).count() == 1


def test_a_missing_branch_is_an_error_on_that_app_only(catalog, github):
    broken = seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, repo_url=github.repository,
                      path=PROD, target_revision="release-9")
    fine = seed_app(catalog.prod_us, "checkout-us", service=catalog.checkout, repo_url=github.repository, path=PROD)

    assert not read_app_pins(broken).ok
    assert read_app_pins(fine).ok
    assert GitPinRead.objects.get(app=broken).last_error
    assert len(git_pins(fine)) == 1 and git_pins(broken) == []


def test_each_app_is_read_at_most_every_ten_minutes(catalog, github, eager_celery):
    now = timezone.now()
    read = seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, repo_url=github.repository, path=PROD)
    seed_app(catalog.dev_cluster, "no-path", service=catalog.checkout, path="")
    GitPinRead.objects.create(app=read, last_read_at=now - timedelta(minutes=4))
    assert due_batches(now) == []
    GitPinRead.objects.filter(app=read).update(last_read_at=now - timedelta(minutes=11))
    assert [batch.app_ids for batch in due_batches(now)] == [(read.pk,)]

    assert read_due_git_pins() == 1
    assert GitPin.objects.filter(app=read).count() == 1
    assert due_batches() == []


def test_demo_mode_reads_the_demo_repository(catalog, settings, tmp_path: Path):
    settings.DEMO_MODE = True
    settings.VAR_DIR = tmp_path
    shop = Service.objects.create(name="shop-checkout", image_repository="ghcr.io/acme-shop/checkout")
    app = seed_app(catalog.dev_cluster, "checkout-dev", service=shop, version="3.3.0",
                   repo_url="https://github.com/acme-shop/gitops.git", path="apps/checkout/overlays/dev")

    assert read_app_pins(app).ok
    assert git_pins(app) == [{"service": "shop-checkout", "version": "3.4.0",
                              "path": "apps/checkout/overlays/dev/kustomization.yaml", "line": 11}]
    assert (tmp_path / "demo-gitops.git" / "HEAD").exists()


def test_a_demo_forge_can_be_handed_in(catalog, tmp_path: Path):
    forge = DemoForge.for_repository("https://github.com/acme-shop/gitops", build_demo_repo(tmp_path / "r.git"))
    shop = Service.objects.create(name="shop-cart", image_repository="ghcr.io/acme-shop/cart")
    app = seed_app(catalog.prod_eu, "cart-prod", service=shop, repo_url="https://github.com/acme-shop/gitops.git",
                   path="apps/cart/overlays/prod")
    assert read_app_pins(app, forge=forge).ok
    assert {p["service"] for p in git_pins(app)} == {"shop-cart"}


def test_pin_summary_says_only_what_differs():
    assert pin_summary(["1.7.0"], ["1.6.0"]) == "Git pins 1.7.0, runs 1.6.0"
    assert pin_summary(["1.7.0"], ["1.7.0"]) == ""
    assert pin_summary([], ["1.6.0"]) == ""
    assert pin_summary(["1.7.0"], []) == "Git pins 1.7.0"


def test_the_service_panel_says_git_pins_and_runs(client, users, catalog):
    now = timezone.now()
    differs = seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0")
    agrees = seed_app(catalog.prod_us, "checkout-us", service=catalog.checkout, version="1.7.0")
    for app in (differs, agrees):
        GitPin.objects.create(app=app, service=catalog.checkout, version="1.7.0", path="a/k.yaml", line=3, read_at=now)
    client.force_login(users["viewer"])

    html = client.get(reverse("service", args=["checkout"])).content.decode()

    assert html.count("Git pins 1.7.0, runs 1.6.0") == 1
    section = html[html.index('data-app="checkout-prod"'):html.index('data-app="checkout-us"')]
    assert "Git pins 1.7.0, runs 1.6.0" in section


def test_the_service_panel_query_count_does_not_grow_with_apps(client, users, catalog):
    client.force_login(users["viewer"])
    now = timezone.now()

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(reverse("service-panels", args=["checkout"])).status_code == 200
        return len(queries)

    app = seed_app(catalog.prod_eu, "checkout-0", service=catalog.checkout, version="1.6.0")
    GitPin.objects.create(app=app, service=catalog.checkout, version="1.7.0", path="k.yaml", line=1, read_at=now)
    few = count()
    for i in range(1, 6):
        app = seed_app(catalog.prod_us, f"checkout-{i}", service=catalog.checkout, version="1.6.0")
        GitPin.objects.create(app=app, service=catalog.checkout, version="1.7.0", path="k.yaml", line=1, read_at=now)
    assert count() == few


# --- pins where pin_source says (a HelmRelease's values beside it, not its chart repository) ---

NOTIFICATIONS_VALUES = "apps/notifications/overlays/prod/values.yaml"


@pytest.fixture
def demo(catalog, settings, tmp_path: Path):
    from django.core.management import call_command

    settings.DEMO_MODE = True
    settings.VAR_DIR = tmp_path
    build_demo_repo(tmp_path / "demo-gitops.git")
    call_command("load_demo", verbosity=0)


def test_the_demo_helmrelease_pins_are_read_from_its_kustomizations_repository(demo, eager_celery):
    from gitops.models import GitOpsApp

    release = GitOpsApp.objects.get(cluster__name="prod-us-1", kind="HelmRelease", name="notifications")
    applier = GitOpsApp.objects.get(cluster__name="prod-us-1", kind="Kustomization", name="notifications")
    # What the poll stored: the chart repository and the chart version, not a Git location.
    assert "charts.acme-shop.io" in release.repo_url and release.target_revision == "0.3.1"

    # Batched with the Kustomization that applied it: one repository, one revision, one read.
    [batch] = [b for b in due_batches() if release.pk in b.app_ids]
    assert applier.pk in batch.app_ids and batch.unknown == ""
    assert batch.repository == applier.repo_url and batch.revision == applier.target_revision

    read_due_git_pins()

    status = GitPinRead.objects.get(app=release)
    assert status.last_error == "" and status.last_ok_at is not None and status.branch == "main"
    assert git_pins(release) == [
        {"service": "notifications", "version": "0.8.4", "path": NOTIFICATIONS_VALUES, "line": 6}
    ]
    # The page line: Git pins what runs, so nothing to say; a later tag in Git would say it.
    assert pin_summary(["0.8.4"], release.running["notifications"]) == ""


def test_a_helmrelease_without_a_git_location_says_why_and_is_not_read(demo, eager_celery):
    from gitops.models import GitOpsApp

    release = GitOpsApp.objects.get(cluster__name="prod-us-1", kind="HelmRelease", name="notifications")
    labels = dict(release.raw["metadata"]["labels"])
    release.raw["metadata"]["labels"] = {k: v for k, v in labels.items() if not k.startswith("kustomize.")}
    release.save(update_fields=["raw"])
    GitPinRead.objects.create(app=release, last_read_at=None)

    read_due_git_pins()

    error = GitPinRead.objects.get(app=release).last_error
    assert "kustomize.toolkit.fluxcd.io/name" in error and "not a repository" not in error
    assert not GitPin.objects.filter(app=release).exists()


def test_an_argo_cd_chart_with_values_files_is_read_in_its_ref_source(catalog, github):
    # The chart comes from a Helm repository; `$values/...` files are in the Git repository.
    chart = "https://charts.bitnami.com/bitnami"
    raw = {
        "metadata": {"name": "checkout-chart", "namespace": "argocd"},
        "spec": {"sources": [
            {"repoURL": chart, "chart": "checkout", "targetRevision": "15.9.0",
             "helm": {"valueFiles": [f"$values/{PROD}/values.yaml"]}},
            {"repoURL": github.repository, "targetRevision": "HEAD", "ref": "values"},
        ]},
    }
    app = seed_app(catalog.prod_eu, "checkout-chart", service=catalog.checkout, version="1.6.0", raw=raw,
                   repo_url=chart, path="", chart="checkout", target_revision="15.9.0", sources=[
                       {"repo_url": chart, "chart": "checkout", "target_revision": "15.9.0", "path": "", "ref": ""},
                       {"repo_url": github.repository, "chart": "", "target_revision": "HEAD", "path": "",
                        "ref": "values"}])

    [batch] = due_batches()
    assert (batch.repository, batch.revision, batch.app_ids) == (github.repository, "HEAD", (app.pk,))

    assert read_app_pins(app).ok
    # Only its value file: the overlay's kustomization and Job beside it are another app's.
    assert {(p["path"], p["line"], p["version"]) for p in git_pins(app)} == {(f"{PROD}/values.yaml", 4, "1.6.0")}
