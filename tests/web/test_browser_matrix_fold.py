"""The folded matrix cell in Debian's headless Chromium: opening its disclosure loads the
lines it keeps (htmx, from the cell partial) into it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model

from portal.kernel.accounts.roles import Role, grant
from portal.kernel.catalog.models import Cluster
from tests.fixtures.browser import screenshot
from tests.fixtures.fleet import make_catalog
from tests.fixtures.seed import seed_app

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def wide(live_server):
    catalog = make_catalog()
    clusters = [Cluster.objects.create(name=f"prod-{n:02d}", environment=catalog.prod,
                                       connection=Cluster.Connection.MANIFESTS) for n in range(7)]
    seed_app(clusters[0], "checkout-0", service=catalog.checkout, version="1.6.0", health="Degraded",
             since=timedelta(hours=1))
    for n, cluster in enumerate(clusters[1:], start=1):
        seed_app(cluster, f"checkout-{n}", service=catalog.checkout, version=f"1.{n % 4}.0")
    user = get_user_model().objects.create_user("vera", password="vera-pass-123")
    grant(user, Role.VIEWER)
    return live_server


def test_opening_a_folded_cell_loads_its_lines(page, wide):
    page.goto(f"{wide.url}/accounts/login/")
    page.fill("input[name=username]", "vera")
    page.fill("input[name=password]", "vera-pass-123")
    page.click("button[type=submit]")
    page.wait_for_url(f"{wide.url}/")
    page.goto(f"{wide.url}/matrix")

    cell = page.locator("tr[data-service=checkout] td.attention")
    assert "Argo: degraded" in cell.locator(".cell-line").first.inner_text()
    more = cell.locator("details.cell-more")
    assert more.locator("summary").inner_text() == "4 versions on 6 clusters"
    assert more.locator(".cell-line").count() == 0

    more.locator("summary").click()
    page.wait_for_function(
        "document.querySelectorAll('tr[data-service=checkout] details.cell-more .cell-line').length === 4"
    )
    assert more.get_attribute("open") is not None
    # Ordered by each line's first cluster, as the matrix orders lines.
    assert more.locator(".cell-line").all_inner_texts() == [
        "1.1.0 2 clusters", "1.2.0 2 clusters", "1.3.0 prod-03", "1.0.0 prod-04",
    ]
    screenshot(page, "matrix-folded-cell-open")
