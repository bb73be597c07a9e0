"""Benchmark: SBOM read + OSV batch for 200 images of ~400 packages each, against the real
registry (Debian's docker-registry, as the tests run it) and the local OSV/KEV fakes.

    .venv/bin/python bench/supply_chain.py [--services 20] [--versions 10]

Each image's SBOM is a CycloneDX 1.4 document built from real package lists
(tests/releases/supply_chain/README.md): ProtonMail Bridge v1.8.0's 201 Go modules plus a
window of 200 of OWASP Juice Shop's npm packages, the window moving with the image so the
images differ as real versions do. Half are attached as cosign `.att` envelopes, half in the
referrers tag schema. Then `read_supply_chain` runs for every service, twice: the figures are
the requests made (registry, OSV), the seconds, and that the second pass reads nothing new.
Pushing the images is set-up, not timed.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from harness import ROOT, bench_database, peak_rss_mib

DATA = ROOT / "tests" / "releases" / "supply_chain"


def documents(count: int) -> list[dict]:
    bridge = json.loads((DATA / "proton-bridge-v1.8.0.cdx.json").read_text())["components"]
    npm = json.loads((DATA / "juice-shop-npm-flat.cdx.json").read_text())["components"]
    made = []
    for i in range(count):
        start = (i * 37) % (len(npm) - 200)
        components = [{k: v for k, v in c.items() if k != "hashes"} for c in bridge] + npm[start : start + 200]
        made.append({"bomFormat": "CycloneDX", "specVersion": "1.4", "version": 1,
                     "serialNumber": f"urn:uuid:00000000-0000-4000-8000-{i:012d}", "components": components})
    return made


def run(args: argparse.Namespace) -> None:
    from portal.kernel.catalog.models import Service
    from portal.releases.kev import refresh_kev
    from portal.releases.models import ImageSbom, PackageCheck, Release
    from portal.releases.oci import RegistryClient
    from portal.releases.sbom_reading import read_supply_chain
    from tests.fakes.oci_registry import push_image, require_binary, start_registry, stop_registry
    from tests.fakes.osv import FeedFake, real_kev, real_records
    from tests.fakes.sbom_images import attach_cosign_att, attach_referrers_tag

    require_binary()
    from django.conf import settings

    fake = FeedFake(records=real_records(), kev=real_kev())
    settings.PORTAL_OSV_URL, settings.PORTAL_KEV_URL = fake.url, fake.kev_url
    work = Path(tempfile.mkdtemp(prefix="bench-sbom-"))
    registry = start_registry(work / "registry", work / "storage", auth=None)
    try:
        images = args.services * args.versions
        docs = documents(images)
        t0 = datetime(2026, 1, 1, tzinfo=UTC)
        services = []
        started = time.perf_counter()
        for s in range(args.services):
            service = Service.objects.create(name=f"bench-svc{s}", image_repository=f"{registry.host}/bench/svc{s}")
            services.append(service)
            for v in range(args.versions):
                tag = f"1.{v}.0"
                digest = push_image(registry.url, f"bench/svc{s}", tag, t0 + timedelta(days=v), oci=True)
                doc = docs[s * args.versions + v]
                if v % 2:
                    attach_cosign_att(registry.url, f"bench/svc{s}", digest, doc, "cyclonedx")
                else:
                    attach_referrers_tag(registry.url, f"bench/svc{s}", digest, json.dumps(doc).encode(), "cyclonedx")
                Release.objects.create(service=service, tag=tag, version=tag, seen_at=t0, digest=digest)
        print(f"set-up: {images} images pushed with SBOMs in {time.perf_counter() - started:.1f} s")
        refresh_kev()
        client = RegistryClient(registry.url, timeout=30)
        for label in ("first pass", "second pass"):
            fake.log.clear()
            started = time.perf_counter()
            totals = {"sboms_read": 0, "registry_requests": 0, "osv_requests": 0, "packages_asked": 0, "errors": 0}
            for s, service in enumerate(services):
                report = read_supply_chain(service, versions=[f"1.{v}.0" for v in range(args.versions)],
                                           client=client, repository=f"bench/svc{s}")
                totals["sboms_read"] += report.sboms_read
                totals["registry_requests"] += report.registry_requests
                totals["osv_requests"] += report.osv_requests
                totals["packages_asked"] += report.packages_asked
                totals["errors"] += len(report.errors)
            seconds = time.perf_counter() - started
            print(f"{label}: {seconds:.1f} s; " + ", ".join(f"{k} {v}" for k, v in totals.items())
                  + f"; OSV fake saw {fake.osv_requests} requests")
        packages = sum(row.package_count for row in ImageSbom.objects.all())
        stored = sum(len(json.dumps(row.packages)) for row in ImageSbom.objects.all())
        rows = ImageSbom.objects.count()
        print(f"stored: {rows} SBOM rows, {packages} packages ({packages / images:.0f} per image), "
              f"{stored / 1e6:.1f} MB of package rows; {PackageCheck.objects.count()} package versions cached; "
              f"peak RSS {peak_rss_mib():.0f} MiB")
    finally:
        stop_registry(registry)
        fake.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--services", type=int, default=20)
    parser.add_argument("--versions", type=int, default=10)
    args = parser.parse_args()
    with bench_database():
        run(args)


if __name__ == "__main__":
    main()
