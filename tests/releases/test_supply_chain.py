"""Supply chain: SBOMs read from the real registry (referrers tag schema, BuildKit attestation
index, cosign .att; SPDX and CycloneDX documents from real public SBOMs), OSV and KEV through
local fakes seeded with real records, the diff of two versions in the pull request description,
and the faults (OSV or KEV unreachable, no SBOM, malformed, too large). Data provenance:
tests/releases/supply_chain/README.md."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from portal.delivery.change_builders import change_for_rollback, change_for_upgrade
from portal.delivery.change_previews import open_change
from portal.delivery.planner import describe
from portal.releases.kev import refresh_kev
from portal.releases.models import FeedStatus, ImageSbom, PackageCheck, Release
from portal.releases.oci import RegistryClient
from portal.releases.osv import OsvClient, check_purls
from portal.releases.sbom import SbomError, parse_sbom
from portal.releases.sbom_reading import read_supply_chain
from portal.releases.sbom_registry import FOUND, MALFORMED, NONE, TOO_LARGE, read_sbom
from portal.releases.vulns import diff, facts_for, summary
from tests.fakes.forges.harness import FILES, serving
from tests.fixtures.seed import seed_app

pytest.register_assert_rewrite("tests.fakes.oci_registry", "tests.fakes.osv")

from tests.fakes.oci_registry import Registry, free_port, push_image  # noqa: E402
from tests.fakes.osv import FeedFake  # noqa: E402
from tests.fakes.sbom_images import attach_cosign_att, attach_referrers_tag, push_buildkit_index  # noqa: E402

pytest_plugins = ["tests.fakes.oci_registry", "tests.fakes.osv"]

DATA = Path(__file__).parent / "supply_chain"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
PROD = "apps/checkout/overlays/prod"


def doc(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def raw(name: str) -> bytes:
    return (DATA / name).read_bytes()


# --- parsing real documents -------------------------------------------------------------


def test_a_real_cyclonedx_document_gives_purls_versions_and_licences() -> None:
    parsed = parse_sbom(raw("proton-bridge-v1.8.0.cdx.json"))

    assert parsed.format == "CycloneDX-1.2" and len(parsed.packages) == 201
    by_name = {p.name: p for p in parsed.packages}
    ini = by_name["gopkg.in/ini.v1"]
    assert (ini.purl, ini.version, ini.licence, ini.type) == (
        "pkg:golang/gopkg.in/ini.v1@v1.51.1",
        "v1.51.1",
        "Apache-2.0",
        "golang",
    )
    assert by_name["github.com/AndreasBriese/bbloom"].licence == "CC0-1.0 AND MIT"


def test_a_real_spdx_document_gives_its_packages_and_their_types() -> None:
    parsed = parse_sbom(raw("example11.spdx.json"))

    assert parsed.format == "SPDX-2.3"
    assert {(p.name, p.type, p.licence) for p in parsed.packages} == {
        ("hello-server-src", "deb", "Apache-2.0"),
        ("hyper", "cargo", "MIT"),
        ("tokio", "cargo", "MIT"),
        ("pretty_env_logger", "cargo", "MIT OR Apache-2.0"),
    }


@pytest.mark.parametrize(
    "data, reason",
    [
        (
            b'{"bomFormat": "CycloneDX", "specVersion": "1.4", "components": [{"type": "not-a-type", "name": 1}]}',
            "CycloneDX:",
        ),
        (json.dumps({k: v for k, v in doc("example11.spdx.json").items() if k != "creationInfo"}).encode(), "SPDX:"),
        (raw("example11.spdx.json")[:900], "not JSON"),
        (b'{"hello": "world"}', "neither SPDX 2.x nor CycloneDX"),
    ],
)
def test_a_document_the_library_refuses_is_malformed_with_its_reason(data: bytes, reason: str) -> None:
    with pytest.raises(SbomError, match=reason):
        parse_sbom(data)


# --- the real registry ----------------------------------------------------------------------


def client_for(registry: Registry) -> RegistryClient:
    return RegistryClient(registry.url, timeout=10)


def test_an_spdx_referrer_is_found_by_the_referrers_tag_schema(open_registry: Registry) -> None:
    repository = f"acme/sbom-ref-{free_port()}"
    image = push_image(open_registry.url, repository, "1.0.0", T0, oci=True)
    attach_referrers_tag(open_registry.url, repository, image, raw("example11.spdx.json"), "spdx")

    result = read_sbom(client_for(open_registry), repository, "1.0.0")

    assert (result.status, result.source, result.format) == (FOUND, "referrers-tag", "SPDX-2.3")
    assert result.image_digest == image and len(result.packages) == 4
    assert result.platform == "" and not result.platform_assumed  # one image: no platform to choose


def test_a_buildkit_index_gives_the_sbom_of_the_clusters_platform(open_registry: Registry) -> None:
    repository = f"acme/sbom-buildkit-{free_port()}"
    index, images = push_buildkit_index(
        open_registry.url,
        repository,
        "2.0.0",
        T0,
        {
            "amd64": (doc("example11.spdx.json"), "spdx"),
            "arm64": (doc("proton-bridge-v1.6.3.cdx.json"), "cyclonedx"),
        },
    )
    client = client_for(open_registry)

    unknown = read_sbom(client, repository, "2.0.0")
    arm = read_sbom(client, repository, "2.0.0", platform="linux/arm64")

    assert (unknown.status, unknown.source, unknown.platform, unknown.platform_assumed) == (
        FOUND,
        "attestation",
        "linux/amd64",
        True,
    )
    assert unknown.image_digest == images["amd64"] and unknown.format == "SPDX-2.3"
    assert (arm.platform, arm.platform_assumed, arm.format, len(arm.packages)) == (
        "linux/arm64",
        False,
        "CycloneDX-1.2",
        201,
    )
    assert arm.image_digest == images["arm64"]


def test_a_cosign_attestation_is_read_from_its_dsse_envelope(open_registry: Registry) -> None:
    repository = f"acme/sbom-cosign-{free_port()}"
    image = push_image(open_registry.url, repository, "1.8.0", T0, oci=True)
    attach_cosign_att(open_registry.url, repository, image, doc("proton-bridge-v1.8.0.cdx.json"), "cyclonedx")

    result = read_sbom(client_for(open_registry), repository, "1.8.0")

    assert (result.status, result.source, result.format, len(result.packages)) == (
        FOUND,
        "cosign-att",
        "CycloneDX-1.2",
        201,
    )


def test_an_image_without_sbom_says_so_and_a_malformed_or_huge_one_says_why(open_registry: Registry) -> None:
    repository = f"acme/sbom-faults-{free_port()}"
    bare = push_image(open_registry.url, repository, "1.0.0", T0, oci=True)
    broken = push_image(open_registry.url, repository, "1.1.0", T0 + timedelta(days=1), oci=True)
    attach_referrers_tag(open_registry.url, repository, broken, raw("example11.spdx.json")[:900], "spdx")
    client = client_for(open_registry)

    none = read_sbom(client, repository, bare)
    malformed = read_sbom(client, repository, "1.1.0")

    assert none.status == NONE and "no SBOM attached" in none.reason
    assert malformed.status == MALFORMED and malformed.reason.startswith("malformed SBOM: not JSON")


def test_a_50_mb_sbom_is_refused_unread(open_registry: Registry) -> None:
    repository = f"acme/sbom-huge-{free_port()}"
    image = push_image(open_registry.url, repository, "1.0.0", T0, oci=True)
    data = raw("proton-bridge-v1.8.0.cdx.json")
    attach_referrers_tag(
        open_registry.url, repository, image, data + b" " * (51 * 1024 * 1024 - len(data)), "cyclonedx"
    )

    result = read_sbom(client_for(open_registry), repository, "1.0.0")

    assert result.status == TOO_LARGE and result.reason == "SBOM too large (51 MB; the limit is 50 MB)"


# --- OSV and KEV through the fakes ------------------------------------------------------------


def test_osv_answers_are_kept_per_package_version_until_they_expire(db, feeds: FeedFake) -> None:
    purls = [p.purl for p in parse_sbom(raw("proton-bridge-v1.8.0.cdx.json")).packages]
    now = timezone.now()

    first = check_purls(purls, now=now)
    again = check_purls(purls, now=now + timedelta(hours=1))
    later = check_purls(purls, now=now + timedelta(hours=25))

    assert first.asked == 201 and first.records_read == 3 and first.requests == 4  # one batch, three records
    assert PackageCheck.objects.get(purl="pkg:golang/golang.org/x/net@v0.0.0-20210405180319-a5a99cb37ef4").vuln_ids == [
        "GHSA-4v7x-pqxf-cx7m",
        "GHSA-qppj-fm5r-hxr3",
        "GHSA-vvpx-j8f3-3w6h",
    ]
    assert (again.asked, again.requests) == (0, 0)
    assert (later.asked, later.records_read, later.requests) == (201, 0, 1)  # records unchanged: not read again


def test_osv_unreachable_is_recorded_and_keeps_what_was_known(db, feeds: FeedFake) -> None:
    purl = "pkg:golang/golang.org/x/net@v0.17.0"
    now = timezone.now()
    check_purls([purl], now=now)
    feeds.fail_osv = True

    report = check_purls([purl], now=now + timedelta(days=2))

    assert "answered 503" in report.error
    status = FeedStatus.objects.get(name="osv")
    assert status.last_ok_at == now and status.last_error == report.error
    assert PackageCheck.objects.get(purl=purl).vuln_ids == ["GHSA-4v7x-pqxf-cx7m"]


def test_osv_pages_a_query_by_its_next_page_token(db) -> None:
    class Paging:
        calls: list[dict] = []

        def request(self, method, url, timeout, json=None):  # noqa: A002
            self.calls.append(json or {})
            first = not json["queries"][0].get("page_token")
            body = {
                "results": [
                    {"vulns": [{"id": "GHSA-1", "modified": "m"}], "next_page_token": "t2"}
                    if first
                    else {"vulns": [{"id": "GHSA-2", "modified": "m"}]}
                ]
            }
            return type("R", (), {"status_code": 200, "json": lambda self: body, "text": ""})()

    client = OsvClient("http://osv.invalid", session=Paging())  # type: ignore[arg-type]

    found = client.query_batch(["pkg:npm/lodash@4.17.20"])

    assert found == {"pkg:npm/lodash@4.17.20": {"GHSA-1": "m", "GHSA-2": "m"}}
    assert Paging.calls[1]["queries"][0]["page_token"] == "t2"


def test_kev_is_replaced_by_a_good_read_and_kept_through_a_bad_one(db, feeds: FeedFake) -> None:
    assert refresh_kev() == ""
    from portal.releases.models import KnownExploited

    assert set(KnownExploited.objects.values_list("cve_id", flat=True)) == {
        "CVE-2023-44487",
        "CVE-2021-44228",
        "CVE-2025-48384",
    }
    feeds.fail_kev = True

    error = refresh_kev()

    assert "answered 503" in error and KnownExploited.objects.count() == 3
    assert FeedStatus.objects.get(name="kev").last_error == error


# --- the acceptance scenario: an upgrade PR, a rollback -----------------------------------------


@pytest.fixture
def gitops(monkeypatch: pytest.MonkeyPatch):
    with serving("github", monkeypatch, dict(FILES)) as harness:
        yield harness


@pytest.fixture
def bridge(db, catalog, open_registry: Registry, feeds: FeedFake):
    """checkout 1.6.0 is ProtonMail Bridge v1.8.0's SBOM (cosign .att), 1.7.0 the derived next
    version's (referrers tag schema), both read from the registry and matched against the fakes."""
    report = read_bridge(catalog, open_registry)
    assert report.errors == [] and report.sboms_read == 2
    return catalog.checkout


def read_bridge(catalog, open_registry: Registry):  # type: ignore[no-untyped-def]
    """The two Bridge images pushed, their SBOMs read and their packages asked of OSV."""
    repository = f"acme/bridge-{free_port()}"
    old = push_image(open_registry.url, repository, "1.6.0", T0, oci=True)
    new = push_image(open_registry.url, repository, "1.7.0", T0 + timedelta(days=30), oci=True)
    attach_cosign_att(open_registry.url, repository, old, doc("proton-bridge-v1.8.0.cdx.json"), "cyclonedx")
    attach_referrers_tag(open_registry.url, repository, new, raw("proton-bridge-derived-next.cdx.json"), "cyclonedx")
    for tag, digest in (("1.6.0", old), ("1.7.0", new)):
        Release.objects.create(service=catalog.checkout, tag=tag, version=tag, seen_at=T0, digest=digest)
    refresh_kev()
    return read_supply_chain(
        catalog.checkout, versions=["1.6.0", "1.7.0"], client=client_for(open_registry), repository=repository
    )


FIXED = (
    "- Known vulnerabilities this change fixes (2):\n"
    "  - CVE-2023-44487 (GHSA-qppj-fm5r-hxr3): **exploited in the wild** (CISA KEV), moderate, "
    "in golang.org/x/net v0.0.0-20210405180319-a5a99cb37ef4; fixed in golang.org/x/net 0.17.0 "
    "— HTTP/2 Stream Cancellation Attack\n"
    "  - CVE-2022-41723 (GHSA-vvpx-j8f3-3w6h): high, in golang.org/x/net v0.0.0-20210405180319-a5a99cb37ef4; "
    "fixed in golang.org/x/net 0.7.0 — golang.org/x/net vulnerable to Uncontrolled Resource Consumption\n"
)
BROUGHT = (
    "- Known vulnerabilities this change brings (1):\n"
    "  - CVE-2023-45286 (GHSA-xwh9-gc39-5298): moderate, in github.com/go-resty/resty/v2 v2.10.0; "
    "fixed in github.com/go-resty/resty/v2 2.11.0 — github.com/go-resty/resty/v2 HTTP request body disclosure\n"
)


def test_the_upgrade_pull_request_lists_fixed_exploited_first_then_brought_and_relicensed(
    bridge, catalog, gitops
) -> None:
    app = seed_app(
        catalog.prod_eu, "checkout-prod", service=bridge, version="1.6.0", repo_url=gitops.repository, path=PROD
    )

    result = open_change(change_for_upgrade(app, bridge, "1.7.0"), None)

    assert result.ok, result.message
    [pull] = gitops.model.pulls
    body = pull.body
    assert "**Supply chain** (1.6.0 → 1.7.0, from the images' SBOMs):\n" + FIXED + BROUGHT in body
    assert "- Still present in 1.7.0 (1): CVE-2023-45288.\n" in body
    assert (
        "- Licences to look at before merging (not legal advice):\n"
        "  - `gopkg.in/ini.v1` v1.51.1: BUSL-1.1 (source-available); was Apache-2.0\n"
    ) in body
    # The Debian bash (GPL-3.0-or-later) is an OS package; MIT, Apache and BSD packages need no look.
    assert "bash" not in body and "MIT" not in body and "BSD-3-Clause" not in body
    assert body.index("Known vulnerabilities this change fixes") < body.index("this change brings")


def test_the_rollback_says_which_known_vulnerabilities_come_back(bridge, catalog) -> None:
    app = seed_app(catalog.prod_eu, "checkout-prod", service=bridge, version="1.7.0", path=PROD)

    change = change_for_rollback(app, bridge, "1.6.0", from_version="1.7.0", failure="CrashLoopBackOff")
    body = describe([change], [], [], [])

    assert "- Known vulnerabilities this rollback fixes (1):\n  - CVE-2023-45286" in body
    assert (
        "- Known vulnerabilities this rollback brings back (2):\n"
        "  - CVE-2023-44487 (GHSA-qppj-fm5r-hxr3): **exploited in the wild**"
    ) in body
    assert "  - CVE-2022-41723" in body.split("brings back (2):")[1]


def test_a_second_pass_reads_nothing_new(bridge, open_registry: Registry, feeds: FeedFake) -> None:
    before = len(feeds.log)

    again = read_supply_chain(
        bridge, versions=["1.6.0", "1.7.0"], client=client_for(open_registry), repository="unused"
    )

    assert (again.sboms_read, again.registry_requests, again.osv_requests) == (0, 0, 0)
    assert len(feeds.log) == before and ImageSbom.objects.count() == 2


# --- faults: the PR still opens and says why the section is missing ----------------------------


def test_without_sboms_the_pull_request_opens_and_says_why(db, catalog, gitops, feeds: FeedFake) -> None:
    Release.objects.create(
        service=catalog.checkout, tag="1.6.0", version="1.6.0", seen_at=T0, digest="sha256:" + "a" * 64
    )
    Release.objects.create(
        service=catalog.checkout, tag="1.7.0", version="1.7.0", seen_at=T0, digest="sha256:" + "b" * 64
    )
    ImageSbom.objects.create(
        digest="sha256:" + "a" * 64,
        status=ImageSbom.NONE,
        read_at=T0,
        reason="no SBOM attached (looked for BuildKit attestations, OCI referrers and cosign attachments)",
    )
    ImageSbom.objects.create(
        digest="sha256:" + "b" * 64,
        status=ImageSbom.TOO_LARGE,
        read_at=T0,
        reason="SBOM too large (51 MB; the limit is 50 MB)",
    )
    app = seed_app(
        catalog.prod_eu,
        "checkout-prod",
        service=catalog.checkout,
        version="1.6.0",
        repo_url=gitops.repository,
        path=PROD,
    )

    result = open_change(change_for_upgrade(app, catalog.checkout, "1.7.0"), None)

    assert result.ok, result.message
    body = gitops.model.pulls[0].body
    assert "- Not complete: 1.6.0: no SBOM attached (looked for BuildKit attestations" in body
    assert "- Not complete: 1.7.0: SBOM too large (51 MB; the limit is 50 MB)." in body
    assert "No known vulnerabilities" not in body


def test_with_osv_and_kev_down_the_section_says_since_when(bridge, catalog, feeds: FeedFake) -> None:
    checked = FeedStatus.objects.get(name="osv").last_ok_at
    feeds.fail_osv = feeds.fail_kev = True
    later = timezone.now() + timedelta(days=2)
    check_purls(["pkg:golang/golang.org/x/net@v0.99.0"], now=later)
    refresh_kev(now=later)

    result = diff(facts_for(bridge, "1.6.0"), facts_for(bridge, "1.7.0"))

    assert any(m.startswith(f"OSV: not checked since {checked:%Y-%m-%d %H:%M} UTC") for m in result.missing), (
        result.missing
    )
    assert any(m.startswith("exploited in the wild (CISA KEV): not checked since") for m in result.missing)
    assert [f.key for f in result.fixed] == ["CVE-2023-44487", "CVE-2022-41723"]  # what was known stays


def test_strings_from_sboms_and_osv_cannot_act_in_the_description() -> None:
    from portal.releases.vulns import Finding, ImageFacts, LicenceChange, SupplyChainDiff
    from portal.releases.vulns import describe as section

    hostile = Finding(
        key="CVE-2024-0001",
        osv_ids=("GHSA-x",),
        severity="high",
        exploited=False,
        summary="click [here](https://evil.example) <img src=x onerror=alert(1)> @admin fixes #1",
        packages=("evil`pkg` 1.0",),
        fixed_in=("evil`pkg` [2.0](https://evil.example)",),
    )
    old = ImageFacts("1.0", ImageSbom.FOUND, findings=(hostile,))
    new = ImageFacts("2.0", ImageSbom.FOUND)
    change = LicenceChange(
        package="x`y](https://evil.example)", version="1", licence="AGPL-3.0-only", kind="network copyleft", before=""
    )
    text = "\n".join(section(SupplyChainDiff(old=old, new=new, fixed=(hostile,), licences=(change,))))

    assert "](https://" not in text and "<img" not in text and "`pkg`" not in text
    assert "@\u200badmin" in text and "#\u200b1" in text


def test_with_osv_down_the_upgrade_pull_request_still_opens_and_says_so(bridge, catalog, gitops, feeds) -> None:
    feeds.fail_osv = True
    check_purls(["pkg:golang/golang.org/x/net@v0.99.0"], now=timezone.now() + timedelta(days=1))
    app = seed_app(
        catalog.prod_eu, "checkout-prod", service=bridge, version="1.6.0", repo_url=gitops.repository, path=PROD
    )

    result = open_change(change_for_upgrade(app, bridge, "1.7.0"), None)

    assert result.ok, result.message
    body = gitops.model.pulls[0].body
    assert "- Not complete: OSV: not checked since " in body and "answered 503" in body
    assert "CVE-2023-44487" in body  # the answers kept from before are still the facts


def test_with_osv_never_reached_what_the_change_fixes_is_unknown_not_none(
    db, catalog, open_registry: Registry, feeds: FeedFake, gitops
) -> None:
    feeds.fail_osv = True
    report = read_bridge(catalog, open_registry)
    assert report.sboms_read == 2 and not FeedStatus.objects.get(name="osv").last_ok_at
    app = seed_app(
        catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0", repo_url=gitops.repository,
        path=PROD,
    )

    result = open_change(change_for_upgrade(app, catalog.checkout, "1.7.0"), None)

    assert result.ok, result.message
    body = gitops.model.pulls[0].body
    assert "- Known vulnerabilities this change fixes: unknown — OSV could not be reached (last tried " in body
    assert "never reached)" in body and "this change brings: unknown — OSV could not be reached" in body
    assert "fixes: none" not in body and "No known vulnerabilities" not in body
    moved = diff(facts_for(catalog.checkout, "1.6.0"), facts_for(catalog.checkout, "1.7.0"))
    assert summary(moved).startswith("known vulnerabilities fixed: unknown — OSV could not be reached")


def test_an_unreachable_registry_leaves_no_answer_and_is_tried_again(db, catalog, feeds) -> None:
    Release.objects.create(
        service=catalog.checkout, tag="1.6.0", version="1.6.0", seen_at=T0, digest="sha256:" + "e" * 64
    )
    closed = RegistryClient(f"http://127.0.0.1:{free_port()}", timeout=2)

    report = read_supply_chain(catalog.checkout, versions=["1.6.0"], client=closed, repository="acme/checkout")

    assert report.errors and "cannot connect" in report.errors[0]
    assert not ImageSbom.objects.exists()  # not "no SBOM": the next pass asks again
    facts = facts_for(catalog.checkout, "1.6.0")
    assert facts.sbom == "unread" and "has not been read yet" in facts.reason


@pytest.mark.parametrize(
    "task", ["releases.read_supply_chain", "releases.read_all_supply_chain", "releases.refresh_kev"]
)
def test_the_supply_chain_runs_on_the_registry_queue_never_in_a_request(task: str) -> None:
    from django.conf import settings

    import portal.releases.tasks  # noqa: F401 - registers the tasks, as the worker's autodiscovery does
    from portal.celery import app

    assert task in app.tasks and app.amqp.router.route({}, task)["queue"].name == "registry"
    scheduled = {entry["task"]: entry for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    if task != "releases.read_supply_chain":
        assert scheduled[task]["options"]["expires"] < scheduled[task]["schedule"]
    assert scheduled.get("releases.refresh_kev", {}).get("schedule") == 86400


def test_a_registry_with_the_referrers_api_is_asked_through_it(open_registry: Registry) -> None:
    from tests.fakes.sbom_images import ReferrersAPI

    repository = f"acme/sbom-api-{free_port()}"
    image = push_image(open_registry.url, repository, "1.0.0", T0, oci=True)
    attach_referrers_tag(open_registry.url, repository, image, raw("proton-bridge-v1.6.3.cdx.json"), "cyclonedx")
    api = ReferrersAPI(open_registry.url)
    try:
        result = read_sbom(RegistryClient(api.url, timeout=10), repository, "1.0.0")
    finally:
        api.close()

    assert (result.status, result.source, len(result.packages)) == (FOUND, "referrers", 201)
    assert api.referrer_requests == [image]


def test_a_cosign_sbom_attachment_is_read(open_registry: Registry) -> None:
    from tests.fakes.sbom_images import attach_cosign_sbom

    repository = f"acme/sbom-attach-{free_port()}"
    image = push_image(open_registry.url, repository, "1.0.0", T0, oci=True)
    attach_cosign_sbom(open_registry.url, repository, image, raw("example11.spdx.json"), "spdx")

    result = read_sbom(client_for(open_registry), repository, "1.0.0")

    assert (result.status, result.source, result.format) == (FOUND, "cosign-sbom", "SPDX-2.3")
