"""/security and /api/v1/security: running versions with known vulnerabilities, worst first, the
newest acceptable release and what it fixes, Open PR for members, the filters, and the faults
(OSV or KEV unreachable, no SBOM) said as "not checked". SBOM rows are stored from the real
documents of tests/releases/supply_chain (as the registry read stores them), OSV and KEV come
from the fakes seeded with real records."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from portal.releases.kev import refresh_kev
from portal.releases.models import ImageSbom, Release
from portal.releases.osv import check_purls
from portal.releases.sbom import parse_sbom
from tests.fakes.forges.harness import FILES, PROD, serving
from tests.fixtures.browser import screenshot
from tests.fixtures.seed import seed_app

pytest.register_assert_rewrite("tests.fakes.osv")

from tests.fakes.osv import FeedFake  # noqa: E402

pytest_plugins = ["tests.fakes.osv"]

DATA = Path(__file__).parent.parent / "releases" / "supply_chain"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@lru_cache(maxsize=8)
def parsed(document: str) -> tuple:
    """A real document's packages, parsed once per run (the library takes a second or two)."""
    return parse_sbom((DATA / document).read_bytes()).packages


def store_sbom(
    service, tag: str, document: str | None, digest_char: str, *, status: str = ImageSbom.FOUND, reason: str = ""
) -> None:
    digest = "sha256:" + digest_char * 64
    Release.objects.create(service=service, tag=tag, version=tag, seen_at=T0, digest=digest)
    packages = parsed(document) if document else ()
    ImageSbom.objects.create(
        digest=digest,
        status=status,
        reason=reason,
        read_at=T0,
        format="CycloneDX-1.2",
        packages=[p.row() for p in packages],
        package_count=len(packages),
    )


@pytest.fixture
def fleet(db, catalog, feeds: FeedFake):
    """checkout runs 1.6.0 (Bridge v1.8.0's SBOM) in prod and staging; 1.7.0 (the derived next
    version) is released; payments runs 3.0.0 whose image has no SBOM."""
    store_sbom(catalog.checkout, "1.6.0", "proton-bridge-v1.8.0.cdx.json", "a")
    store_sbom(catalog.checkout, "1.7.0", "proton-bridge-derived-next.cdx.json", "b")
    store_sbom(
        catalog.payments,
        "3.0.0",
        None,
        "c",
        status=ImageSbom.NONE,
        reason="no SBOM attached (looked for BuildKit attestations, OCI referrers and cosign attachments)",
    )
    prod = seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0")
    seed_app(catalog.staging_cluster, "checkout-staging", service=catalog.checkout, version="1.6.0")
    seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, version="3.0.0")
    refresh_kev()
    purls = {row[0] for sbom in ImageSbom.objects.all() for row in sbom.packages if row[0]}
    assert check_purls(purls).error == ""
    return prod


def rows(html: str) -> list[str]:
    return [part.split('"', 1)[0] for part in html.split('data-version="')[1:]]


def test_the_page_lists_running_versions_worst_first_with_the_release_that_fixes_them(client, users, fleet) -> None:
    client.force_login(users["member"])

    html = client.get(reverse("security")).content.decode()

    assert html.count('data-service="checkout"') == 2 and 'data-service="payments"' not in html
    first = html.index("CVE-2023-44487")
    assert "exploited" in html[first - 400 : first] and first < html.index("CVE-2022-41723") < html.index(
        "CVE-2023-45288"
    )
    assert "fixes 2 of 3" in html and "fixed in 1.7.0" in html
    assert f"item={fleet.pk}%3A" in html and "Open PR → 1.7.0" in html
    # payments' image has no SBOM: not checked, with the reason, never "no vulnerabilities".
    assert "Not checked" in html and "no SBOM attached (looked for" in html
    assert 'href="/security"' in html  # the navigation link


def test_viewers_see_the_facts_without_open_pr(client, users, fleet) -> None:
    client.force_login(users["viewer"])

    html = client.get(reverse("security")).content.decode()

    assert "CVE-2023-44487" in html and "Open PR" not in html


@pytest.mark.parametrize(
    "query, present, absent",
    [
        ("exploited=1", ["CVE-2023-44487"], ["CVE-2022-41723", "CVE-2023-45288"]),
        ("severity=high", ["CVE-2022-41723"], ["CVE-2023-44487", "CVE-2023-45288"]),
        ("environment=staging", ['data-environment="staging"'], ['data-environment="prod"']),
        ("team=shop", ["CVE-2023-44487"], []),
    ],
)
def test_the_filters(client, users, fleet, query: str, present: list[str], absent: list[str]) -> None:
    client.force_login(users["viewer"])

    html = client.get(reverse("security") + "?" + query).content.decode()

    for text in present:
        assert text in html, text
    for text in absent:
        assert text not in html, text


def test_osv_and_kev_unreachable_say_not_checked_since(client, users, fleet, feeds: FeedFake) -> None:
    feeds.fail_osv = feeds.fail_kev = True
    check_purls(["pkg:golang/golang.org/x/net@v0.99.0"], now=timezone.now() + timedelta(days=1))
    refresh_kev()
    client.force_login(users["viewer"])

    html = client.get(reverse("security")).content.decode()

    assert "Vulnerabilities (OSV): not checked since" in html and "answered 503" in html
    assert "Exploited in the wild (CISA KEV): not checked since" in html
    assert "CVE-2023-44487" in html  # what was known stays shown


@pytest.fixture
def target_unknown(db, catalog, feeds: FeedFake):
    """checkout runs 1.6.0 in prod, matched against OSV; 1.7.0's SBOM is read but OSV went down
    before its packages were asked about: what the upgrade fixes is not known."""
    store_sbom(catalog.checkout, "1.6.0", "proton-bridge-v1.8.0.cdx.json", "a")
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0")
    refresh_kev()
    assert check_purls({row[0] for row in ImageSbom.objects.get().packages if row[0]}).error == ""
    store_sbom(catalog.checkout, "1.7.0", "proton-bridge-derived-next.cdx.json", "b")
    feeds.fail_osv = True
    new = ImageSbom.objects.get(digest="sha256:" + "b" * 64)
    assert "answered 503" in check_purls({row[0] for row in new.packages if row[0]}).error


def test_what_the_target_fixes_is_unknown_not_zero_when_osv_never_answered(client, users, target_unknown) -> None:
    from portal.api.mcp import tools
    from portal.api.mcp.api_pages import Caller
    from portal.kernel.accounts import tokens

    client.force_login(users["viewer"])
    html = client.get(reverse("security")).content.decode()
    assert "fixes: unknown — OSV could not be reached (last tried " in html and "fixes 0 of" not in html
    [exposure] = client.get("/api/v1/security").json()["exposures"]
    assert exposure["fixed_by_newest_acceptable"] is None  # not [], which reads as "fixes nothing"
    assert exposure["fixed_by_newest_acceptable_unknown"].startswith("OSV could not be reached (last tried ")
    _, plain = tokens.issue(users["viewer"], "assistant")
    [compact] = tools.security(Caller(token=plain, host="testserver"), {})["exposures"]
    assert compact["fixed_by_newest_acceptable"].startswith("unknown — OSV could not be reached")
    assert "last reached " in compact["fixed_by_newest_acceptable"]


def test_the_api_carries_the_same_facts(client, users, fleet) -> None:
    client.force_login(users["viewer"])

    body = client.get("/api/v1/security?environment=prod").json()

    [exposure] = body["exposures"]
    assert (exposure["service"], exposure["version"], exposure["newest_acceptable"]) == ("checkout", "1.6.0", "1.7.0")
    assert [v["id"] for v in exposure["vulnerabilities"]] == ["CVE-2023-44487", "CVE-2022-41723", "CVE-2023-45288"]
    assert exposure["vulnerabilities"][0]["exploited"] is True
    assert exposure["fixed_by_newest_acceptable"] == ["CVE-2023-44487", "CVE-2022-41723"]
    assert body["not_checked"][0]["service"] == "payments" and body["osv"]["error"] == ""


@pytest.fixture
def gitops(monkeypatch: pytest.MonkeyPatch):
    """The GitOps repository the preview reads, on the GitHub fake."""
    with serving("github", monkeypatch, dict(FILES)) as harness:
        yield harness


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_security_page_in_a_browser(live_server, page, catalog, feeds: FeedFake, gitops,
                                        eager_celery) -> None:
    # eager_celery: the preview "Open PR" leads to is read by its forge-queue task at once (preview_jobs).
    from django.contrib.auth import get_user_model

    from portal.kernel.accounts.roles import Role, grant

    store_sbom(catalog.checkout, "1.6.0", "proton-bridge-v1.8.0.cdx.json", "a")
    store_sbom(catalog.checkout, "1.7.0", "proton-bridge-derived-next.cdx.json", "b")
    store_sbom(
        catalog.payments,
        "3.0.0",
        "example11.spdx.json",
        "c",
        status=ImageSbom.MALFORMED,
        reason="malformed SBOM: not JSON: Unterminated string starting at: line 1",
    )
    seed_app(
        catalog.prod_eu,
        "checkout-prod",
        service=catalog.checkout,
        version="1.6.0",
        repo_url=gitops.repository,
        path=PROD,
    )
    seed_app(catalog.staging_cluster, "checkout-staging", service=catalog.checkout, version="1.6.0")
    seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, version="3.0.0")
    refresh_kev()
    check_purls({row[0] for sbom in ImageSbom.objects.all() for row in sbom.packages if row[0]})
    user = get_user_model().objects.create_user("sec", password="sec-pass-123")
    grant(user, Role.MEMBER)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "sec")
    page.fill("input[name=password]", "sec-pass-123")
    page.click("button[type=submit]")

    page.goto(f"{live_server.url}/security")

    table = page.locator("table.security tbody tr")
    assert table.count() == 2
    first = table.nth(0)
    assert "CVE-2023-44487" in first.inner_text() and "exploited" in first.inner_text()
    assert first.locator("a.open-pr").inner_text() == "Open PR → 1.7.0"
    assert "malformed SBOM" in page.locator("table.security-unchecked").inner_text()
    screenshot(page, "security")
    page.check("input[name=exploited]")
    page.click("#security-filters button[type=submit]")
    assert "CVE-2022-41723" not in page.locator("table.security").inner_text()
    page.locator("a.open-pr").first.click()
    description = page.locator("pre.description").inner_text()
    assert "Supply chain" in description and "CVE-2023-44487" in description and "BUSL-1.1" in description
    screenshot(page, "security-preview")


def test_updates_lines_say_what_the_upgrade_fixes_and_brings(client, users, fleet) -> None:
    client.force_login(users["viewer"])

    html = client.get(reverse("updates")).content.decode()

    assert html.count("fixes 2 known vulnerabilities (1 exploited) · brings 1 · 1 licence to look at") == 2


def test_the_security_page_reads_a_fixed_number_of_queries_whatever_the_fleet(client, users, fleet, catalog) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(users["viewer"])

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(reverse("security")).status_code == 200
        return len(queries)

    few = count()
    store_sbom(catalog.payments, "3.1.0", "proton-bridge-v1.6.3.cdx.json", "d")
    for i in range(5):
        seed_app(catalog.prod_us, f"checkout-us-{i}", service=catalog.checkout, version="1.7.0")
        seed_app(catalog.dev_cluster, f"payments-dev-{i}", service=catalog.payments, version="3.1.0")
    check_purls({row[0] for sbom in ImageSbom.objects.all() for row in sbom.packages if row[0]})

    assert count() <= few + 1
    assert 'data-service="payments"' in client.get(reverse("security")).content.decode()


def test_the_assistants_service_tool_carries_the_same_facts(users, fleet) -> None:
    """The MCP `service` tool answers what /security says of that service (one definition)."""
    from portal.api.mcp import tools
    from portal.api.mcp.api_pages import Caller
    from portal.kernel.accounts import tokens

    _, plain = tokens.issue(users["viewer"], "assistant")
    answer = tools.service(Caller(token=plain, host="testserver"), "checkout")
    prod = next(e for e in answer["security"]["exposed"] if e["environment"] == "prod")
    assert (prod["version"], prod["count"], prod["exploited"]) == ("1.6.0", 3, 1)
    assert prod["worst"][0] == {"id": "CVE-2023-44487", "severity": prod["worst"][0]["severity"], "exploited": True}
    assert (prod["newest_acceptable"], prod["fixed_by_newest_acceptable"]) == ("1.7.0", 2)
    assert "prod 1.6.0: 3 (1 exploited); fixed by 1.7.0: 2" in answer["summary"]


def test_the_assistants_security_tool_carries_the_apis_facts(client, users, fleet) -> None:
    """The MCP `security` tool reads /api/v1/security with the same filters: the same exposures,
    compact, and what is not checked."""
    from portal.api.mcp import tools
    from portal.api.mcp.api_pages import Caller
    from portal.kernel.accounts import tokens

    _, plain = tokens.issue(users["viewer"], "assistant")
    client.force_login(users["viewer"])
    api = client.get("/api/v1/security?environment=prod").json()
    answer = tools.security(Caller(token=plain, host="testserver"), {"environment": "prod"})
    [exposure] = answer["exposures"]
    assert (exposure["service"], exposure["environment"], exposure["version"]) == ("checkout", "prod", "1.6.0")
    assert [v["id"] for v in exposure["worst"]] == [v["id"] for v in api["exposures"][0]["vulnerabilities"]]
    assert (exposure["count"], exposure["exploited"], exposure["fixed_by_newest_acceptable"]) == (3, 1, 2)
    assert answer["not_checked"] == api["not_checked"] and answer["osv"] == api["osv"]
    assert answer["summary"].startswith("1 running versions with known vulnerabilities (1 with one exploited")
    exploited = tools.security(Caller(token=plain, host="testserver"), {"exploited": True}, page_size=1)
    assert [e["environment"] for e in exploited["exposures"]] == ["prod"] and exploited["next_cursor"] == "1"
    second = tools.security(Caller(token=plain, host="testserver"), {"exploited": True}, cursor="1", page_size=1)
    assert [e["environment"] for e in second["exposures"]] == ["staging"] and second["next_cursor"] is None
