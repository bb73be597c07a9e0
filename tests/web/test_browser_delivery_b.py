"""The Delivery page in Debian's headless Chromium: medians at the top, the pull requests of the
last 30 days, what is merged but not deployed and why, promotions waiting with their buttons,
and the rollback offer on the service page. Screenshot: test-artifacts/delivery.png."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from gitops.models import RunningVersion, VersionChange
from portal.delivery import version_matrix
from portal.delivery.models import PullRequest
from portal.kernel.accounts.roles import Role, grant
from tests.fixtures.browser import screenshot
from tests.fixtures.fleet import make_catalog
from tests.fixtures.seed import seed_app

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def pr(number: int, **extra) -> PullRequest:
    values = dict(
        kind="upgrade", services=["checkout"], environment="prod", clusters=[],
        repository="https://github.com/acme/gitops", forge_kind="github", number=number,
        url=f"https://github.com/acme/gitops/pull/{number}", branch=f"portal/b{number}", base_branch="main",
        state="merged", from_version="1.6.0", to_version="1.7.0",
    )
    values.update(extra)
    values.setdefault("title", f"Update {', '.join(values['services'])} to {values['to_version']} in prod")
    return PullRequest.objects.create(**values)


@pytest.fixture
def seeded(live_server):
    catalog = make_catalog()
    now = timezone.now()
    user = get_user_model().objects.create_user("mia", password="mia-pass-123")
    grant(user, Role.MEMBER)
    seed_app(catalog.staging_cluster, "checkout-staging", service=catalog.checkout, version="1.8.0")
    staging = seed_app(catalog.staging_cluster, "payments-staging", service=catalog.payments, version="2.6.0")
    VersionChange.objects.create(service=catalog.payments, environment=catalog.staging,
                                 cluster=catalog.staging_cluster, app=staging, from_version="2.5.0",
                                 to_version="2.6.0", at=now - timedelta(hours=30))
    shop = seed_app(catalog.prod_eu, "shop-prod", service=catalog.checkout, version="1.7.0")
    shop.services.add(catalog.payments)
    RunningVersion.objects.create(cluster=catalog.prod_eu, workload=shop.workloads.get(), app=shop,
                                  service=catalog.payments, container="payments",
                                  image="ghcr.io/acme/payments:2.5.0", version="2.5.0")
    version_matrix.refresh(catalog.prod_eu.id)
    seed_app(catalog.prod_us, "checkout-us", service=catalog.checkout, version="1.7.0", manual_sync=True)

    day = timedelta(days=1)
    pr(101, opened_by=user, opened_at=now - 6 * day, merged_at=now - 6 * day + timedelta(hours=2),
       running_at=now - 6 * day + timedelta(hours=2, minutes=18))
    pr(102, automatic=True, services=["payments"], from_version="2.4.0", to_version="2.5.0",
       opened_at=now - 4 * day, merged_at=now - 4 * day + timedelta(hours=5),
       running_at=now - 4 * day + timedelta(hours=5, minutes=42))
    pr(103, opened_outside=True, kind="rollback", from_version="1.6.1", to_version="1.6.0",
       title="Roll back checkout to 1.6.0 in prod", opened_at=now - 2 * day,
       merged_at=now - 2 * day + timedelta(minutes=25), running_at=now - 2 * day + timedelta(minutes=31))
    pr(104, opened_by=user, to_version="1.8.0", from_version="1.7.0", opened_at=now - timedelta(hours=5),
       merged_at=now - timedelta(hours=3))
    pr(105, opened_by=user, state="open", services=["payments"], to_version="2.7.0", from_version="2.6.0",
       environment="staging", title="Update payments to 2.7.0 in staging", opened_at=now - timedelta(minutes=40))
    pr(106, state="closed", automatic=True, to_version="1.7.1", opened_at=now - 3 * day,
       closed_at=now - 3 * day + timedelta(hours=1))
    return live_server


def test_delivery_page(page, seeded):
    page.goto(f"{seeded.url}/accounts/login/")
    page.fill("input[name=username]", "mia")
    page.fill("input[name=password]", "mia-pass-123")
    page.click("button[type=submit]")
    page.wait_for_url(f"{seeded.url}/")
    page.goto(f"{seeded.url}/delivery")

    # Medians of 2 h 18, 5 h 42 and 31 min from opening; 18, 42 and 6 min from merge.
    assert page.locator("#median-proposal strong").inner_text() == "2 h 18 min"
    assert page.locator("#median-merge strong").inner_text() == "18 min"
    assert page.locator("tr.pr-row").count() == 6
    statuses = dict(zip(page.locator("tr.pr-row").evaluate_all("rows => rows.map(r => r.dataset.pr)"),
                        page.locator("tr.pr-row").evaluate_all("rows => rows.map(r => r.dataset.status)"),
                        strict=True))
    assert list(statuses.values()).count("running") == 3
    not_deployed = page.locator("#not-deployed").inner_text()
    assert "prod-us-1: Argo CD syncs checkout-us by hand: merging does not deploy it" in not_deployed
    assert "prod-eu-1: Argo CD has not synced shop-prod since the merge" in not_deployed
    promotions = page.locator("#promotions")
    assert promotions.locator("a.promote").count() == 3  # checkout on both prod clusters, payments on one
    assert promotions.locator("a.promote-app").inner_text() == "Promote shop-prod → prod"
    assert "since" in promotions.locator("tr.promotion[data-service=payments]").inner_text()
    screenshot(page, "delivery")
