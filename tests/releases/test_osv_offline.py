"""The offline OSV database: OSV's exports (a zip of OSV JSON records, as
osv-vulnerabilities.storage.googleapis.com/<ECOSYSTEM>/all.zip is) imported by `manage.py
import_osv`, refreshed by its task, and matched with the API's semantics with no network.

The zip is built here from the real GitHub Advisory records of tests/releases/supply_chain/osv
(OSV schema 1.4.0, provenance in its README); the packages are the real Proton Bridge SBOMs'."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from portal.releases import osv_offline
from portal.releases.models import FeedStatus, ImageSbom, OfflineAdvisory, PackageCheck, Release
from portal.releases.osv import check_purls
from portal.releases.osv_ranges import affects, in_range, names_package, package_of
from portal.releases.sbom import parse_sbom
from portal.releases.vulns import describe, diff, facts_for
from portal.settingvalues import osv_offline_sources
from tests.fixtures.seed import seed_app

pytest.register_assert_rewrite("tests.fakes.osv")

from tests.fakes.osv import FeedFake  # noqa: E402

pytest_plugins = ["tests.fakes.osv"]

DATA = Path(__file__).parent / "supply_chain"
RECORDS = sorted((DATA / "osv").glob("*.json"))
UNREACHABLE = "http://127.0.0.1:9"  # the discard port: nothing answers there
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def export(tmp_path: Path) -> Path:
    """A Go/all.zip-shaped export: one OSV record per file, named by its id; plus one entry
    that is no record, which an import skips."""
    path = tmp_path / "all.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for record in RECORDS:
            archive.writestr(record.name, record.read_bytes())
        archive.writestr("README.json", b"[]")
    return path


def purls_of(document: str) -> list[str]:
    return [p.purl for p in parse_sbom((DATA / document).read_bytes()).packages if p.purl]


def test_import_osv_reads_the_zip_and_skips_what_is_no_record(db, export: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    call_command("import_osv", str(export), stdout=out, stderr=err)
    assert out.getvalue().strip() == f"{len(RECORDS)} OSV records imported from all.zip (1 entries skipped)"
    assert "README.json: not an OSV record" in err.getvalue()
    assert set(OfflineAdvisory.objects.values_list("osv_id", flat=True)) == {r.stem for r in RECORDS}
    # Imported again: replaced, not doubled.
    call_command("import_osv", str(export), stdout=io.StringIO(), stderr=io.StringIO())
    assert OfflineAdvisory.objects.count() == len(RECORDS)


def test_import_osv_keeps_only_the_ecosystem_asked_for(db, export: Path) -> None:
    out = io.StringIO()
    call_command("import_osv", str(export), "--ecosystem", "PyPI", stdout=out, stderr=io.StringIO())
    assert out.getvalue().startswith("0 OSV records imported") and not OfflineAdvisory.objects.exists()
    call_command("import_osv", str(export), "--ecosystem", "Go", stdout=io.StringIO(), stderr=io.StringIO())
    assert OfflineAdvisory.objects.count() == len(RECORDS)  # all four name Go packages


def test_import_osv_refuses_what_is_not_an_export(db, tmp_path: Path) -> None:
    broken = tmp_path / "all.zip"
    broken.write_bytes(b"not a zip")
    with pytest.raises(CommandError, match="not a zip of OSV records"):
        call_command("import_osv", str(broken))
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_osv", str(tmp_path / "missing.zip"))


def test_offline_answers_are_the_apis_for_every_package_of_two_real_sboms(db, export: Path, settings,
                                                                           feeds: FeedFake) -> None:
    """The same purls asked of the OSV fake (the API's answers) and of the imported export."""
    purls = sorted(set(purls_of("proton-bridge-v1.8.0.cdx.json") + purls_of("proton-bridge-derived-next.cdx.json")))
    assert check_purls(purls).error == ""
    online = dict(PackageCheck.objects.values_list("purl", "vuln_ids"))
    assert any(online.values())
    PackageCheck.objects.all().delete()
    osv_offline.import_export(export)
    settings.PORTAL_OSV_OFFLINE = [str(export)]
    settings.PORTAL_OSV_URL = UNREACHABLE
    requests_before = feeds.osv_requests

    report = check_purls(purls)

    assert report.error == "" and report.requests == 0 and feeds.osv_requests == requests_before
    assert dict(PackageCheck.objects.values_list("purl", "vuln_ids")) == online


def store_sbom(service, tag: str, document: str, digest_char: str) -> None:  # type: ignore[no-untyped-def]
    digest = "sha256:" + digest_char * 64
    Release.objects.create(service=service, tag=tag, version=tag, seen_at=T0, digest=digest)
    packages = parse_sbom((DATA / document).read_bytes()).packages
    ImageSbom.objects.create(digest=digest, status=ImageSbom.FOUND, read_at=T0, format="CycloneDX-1.2",
                             packages=[p.row() for p in packages], package_count=len(packages))


def test_the_preview_and_security_page_find_the_vulnerability_with_no_network(
    db, catalog, export: Path, settings, client, users
) -> None:
    settings.PORTAL_OSV_OFFLINE = [str(export)]
    settings.PORTAL_OSV_URL = UNREACHABLE
    osv_offline.refresh()
    assert FeedStatus.objects.get(name=osv_offline.FEED).last_error == ""
    store_sbom(catalog.checkout, "1.6.0", "proton-bridge-v1.8.0.cdx.json", "a")
    store_sbom(catalog.checkout, "1.7.0", "proton-bridge-derived-next.cdx.json", "b")
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0")
    purls = {row[0] for sbom in ImageSbom.objects.all() for row in sbom.packages if row[0]}
    assert check_purls(purls).error == ""

    text = "\n".join(describe(diff(facts_for(catalog.checkout, "1.6.0"), facts_for(catalog.checkout, "1.7.0"))))
    assert "- Known vulnerabilities this change fixes (2):" in text and "CVE-2023-44487" in text
    client.force_login(users["viewer"])
    html = client.get(reverse("security")).content.decode()
    assert "CVE-2023-44487" in html and "fixes 2 of 3" in html


def test_the_beat_task_downloads_an_export_from_a_mirror_and_imports_it(db, export: Path, settings) -> None:
    """The task beat runs when PORTAL_OSV_OFFLINE is set, with the export served over HTTP as a
    mirror inside the network would serve it (<ECOSYSTEM>/all.zip)."""
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    from portal.releases.tasks import refresh_osv_offline

    (export.parent / "Go").mkdir()
    export.rename(export.parent / "Go" / "all.zip")
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(export.parent))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        settings.PORTAL_OSV_OFFLINE = [f"{base}/Go/all.zip"]
        assert refresh_osv_offline() == {"records": len(RECORDS), "sources": 1}
        settings.PORTAL_OSV_OFFLINE = [f"{base}/PyPI/all.zip"]  # not on the mirror: 404
        assert refresh_osv_offline() == {"records": 0, "sources": 0}
    finally:
        server.shutdown()
    assert "answered 404" in FeedStatus.objects.get(name=osv_offline.FEED).last_error
    assert OfflineAdvisory.objects.count() == len(RECORDS)


def test_a_refresh_that_cannot_read_a_source_says_so_and_keeps_the_records(db, export: Path, tmp_path) -> None:
    osv_offline.refresh([str(export)])
    broken = tmp_path / "broken.zip"
    broken.write_bytes(b"PK but not really")
    osv_offline.refresh([str(broken)])
    status = FeedStatus.objects.get(name=osv_offline.FEED)
    assert "broken.zip" in status.last_error and status.last_ok_at is not None
    assert OfflineAdvisory.objects.count() == len(RECORDS)


def test_an_empty_offline_database_is_an_osv_failure_not_a_clean_answer(db, settings) -> None:
    settings.PORTAL_OSV_OFFLINE = ["/srv/osv/Go/all.zip"]
    report = check_purls(["pkg:golang/golang.org/x/net@v0.16.0"])
    assert "offline OSV database is empty" in report.error
    assert not PackageCheck.objects.exists()


def test_a_directory_of_records_and_pypi_names_as_osv_compares_them(db, tmp_path: Path, settings) -> None:
    """A record in the OSV schema's shape whose package name is written as its project spells it:
    OSV (PEP 503) finds it for any spelling of the name."""
    folder = tmp_path / "PyPI"
    folder.mkdir()
    (folder / "PYSEC-2099-1.json").write_text(json.dumps({
        "schema_version": "1.6.0", "id": "PYSEC-2099-1", "modified": "2099-01-02T00:00:00Z",
        "aliases": ["CVE-2099-0001"], "summary": "example",
        "affected": [{"package": {"ecosystem": "PyPI", "name": "Django_REST", "purl": "pkg:pypi/django-rest"},
                      "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "3.2"}]}],
                      "versions": ["3.0", "3.1"]}],
    }))
    assert osv_offline.import_export(folder).records == 1
    settings.PORTAL_OSV_OFFLINE = [str(folder)]
    report = check_purls(["pkg:pypi/django.rest@3.1", "pkg:pypi/Django-Rest@3.2"])
    assert report.error == ""
    assert dict(PackageCheck.objects.values_list("purl", "vuln_ids")) == {
        "pkg:pypi/django.rest@3.1": ["PYSEC-2099-1"], "pkg:pypi/Django-Rest@3.2": []}


def test_the_setting_names_paths_or_urls_and_refuses_anything_else() -> None:
    assert osv_offline_sources("") == []
    assert osv_offline_sources(" /srv/osv/Go/all.zip, https://mirror.internal/osv/PyPI/all.zip ") == [
        "/srv/osv/Go/all.zip", "https://mirror.internal/osv/PyPI/all.zip"]
    with pytest.raises(ValueError, match="neither an absolute path"):
        osv_offline_sources("osv/Go/all.zip")


# --- the OSV schema's range evaluation -------------------------------------------------------


def record(name: str) -> dict:
    return json.loads((DATA / "osv" / f"{name}.json").read_text())


@pytest.mark.parametrize("version, affected", [
    ("v0.0.0-20210405180319-a5a99cb37ef4", True),  # the pseudo-version Bridge 1.8.0 pins
    ("v0.16.0", True), ("v0.17.0", False), ("v0.18.0", False),
])
def test_go_versions_against_a_real_record(version: str, affected: bool) -> None:
    package = package_of(f"pkg:golang/golang.org/x/net@{version}")
    assert package is not None
    entries = [a for a in record("GHSA-qppj-fm5r-hxr3")["affected"] if names_package(a, package)]
    assert entries and any(affects(a, package) for a in entries) is affected


def test_the_schemas_event_walk() -> None:
    from univers.versions import PypiVersion

    two_ranges = [{"introduced": "1.0"}, {"fixed": "1.5"}, {"introduced": "2.0"}, {"fixed": "2.5"}]
    assert [in_range(v, two_ranges, PypiVersion) for v in ("0.9", "1.0", "1.7", "2.2", "2.5")] == [
        False, True, False, True, False]
    last = [{"introduced": "0"}, {"last_affected": "2.5"}]
    assert [in_range(v, last, PypiVersion) for v in ("0.1", "2.5", "2.5.1")] == [True, True, False]
    listed = {"package": {"ecosystem": "PyPI", "name": "Django_REST"}, "versions": ["3.1"]}
    package = package_of("pkg:pypi/django-rest@3.1")
    assert package is not None and names_package(listed, package) and affects(listed, package)


def test_a_distribution_release_must_match_when_both_name_one() -> None:
    entry = {"package": {"ecosystem": "Debian:12", "name": "bash"}, "versions": ["5.2.15-2+b2"]}
    bookworm = package_of("pkg:deb/debian/bash@5.2.15-2%2Bb2?distro=debian-12")
    bullseye = package_of("pkg:deb/debian/bash@5.2.15-2%2Bb2?distro=debian-11")
    assert bookworm is not None and bullseye is not None
    assert names_package(entry, bookworm) and not names_package(entry, bullseye)
