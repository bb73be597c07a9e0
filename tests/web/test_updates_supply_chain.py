"""/updates says once per page which lines' supply chain could not be compared and why,
instead of "supply chain not checked" on each of its lines (40 on the demo)."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from portal.releases.models import ImageSbom, Release
from portal.releases.vulns import ImageFacts, SupplyChainDiff
from portal.web.views.updates import unchecked_note
from tests.fixtures.seed import seed_app


def diff(old: str, new: str) -> SupplyChainDiff:
    return SupplyChainDiff(old=ImageFacts("1.6.0", old), new=ImageFacts("1.7.0", new))


def test_the_note_counts_the_lines_not_compared_by_why_the_commonest_first():
    results = [diff(ImageSbom.NONE, ImageSbom.NONE), diff(ImageSbom.FOUND, ImageSbom.NONE),
               diff(ImageSbom.FOUND, "unread"), diff(ImageSbom.FOUND, ImageSbom.FOUND)]
    assert unchecked_note(results) == (
        "Supply chain not checked for 3 of 4 lines: an image publishes no SBOM (2); "
        "not read yet (the registry digest or the SBOM of a version) (1).")
    assert unchecked_note([diff(ImageSbom.FOUND, ImageSbom.FOUND)]) == ""
    assert unchecked_note([]) == ""


@pytest.mark.django_db
def test_the_page_says_it_once_and_no_line_repeats_it(client, users, catalog):
    now = timezone.now()
    Release.objects.bulk_create(Release(service=catalog.checkout, tag=t, version=t, seen_at=now)
                                for t in ("1.6.0", "1.7.0"))
    for n in range(3):
        seed_app(catalog.prod_eu, f"checkout-{n}", service=catalog.checkout, version="1.6.0")
    client.force_login(users["viewer"])
    html = client.get(reverse("updates")).content.decode()
    assert html.count('data-target="1.7.0"') == 3  # three lines behind
    assert html.count("Supply chain not checked for 3 of 3 lines: not read yet") == 1
    assert "supply chain not checked" not in html and 'class="muted supply-chain"' not in html
