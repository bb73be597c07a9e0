"""Local fakes of OSV (`POST /v1/querybatch`, `GET /v1/vulns/{id}`) and of CISA's KEV feed, seeded
with real records copied with provenance (tests/releases/supply_chain/README.md).

The OSV fake answers as api.osv.dev does: one result per query, `vulns: [{id, modified}]` only
(the full record comes from /v1/vulns), nothing for a package no record names. Matching follows
the records' own `affected[].ranges` (ECOSYSTEM events introduced / fixed / last_affected) with
a semver order that puts Go pseudo-versions (v0.0.0-2021…) before 0.0.1, as Go does. Both fakes
count requests and can be switched to fail (503) or to hang up, for the fault tests.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

import pytest
from packageurl import PackageURL

DATA = Path(__file__).resolve().parents[1] / "releases" / "supply_chain"
ECOSYSTEMS = {
    "golang": "Go",
    "npm": "npm",
    "maven": "Maven",
    "pypi": "PyPI",
    "cargo": "crates.io",
    "gem": "RubyGems",
    "composer": "Packagist",
    "nuget": "NuGet",
    "deb": "Debian",
    "apk": "Alpine",
}


def version_key(text: str) -> tuple:
    text = text.lstrip("v")
    base, _, pre = text.partition("-")
    parts = tuple(int(p) if p.isdigit() else 0 for p in re.split(r"[.+]", base) if p != "")
    return parts + (0,) * (4 - len(parts)), 0 if pre else 1, pre


def affects(record: dict, ecosystem: str, name: str, version: str) -> bool:
    for affected in record.get("affected") or []:
        package = affected.get("package") or {}
        if package.get("ecosystem") != ecosystem or package.get("name") != name:
            continue
        if version in (affected.get("versions") or []):
            return True
        for rng in affected.get("ranges") or []:
            inside = False
            for event in rng.get("events") or []:
                if "introduced" in event:
                    inside = event["introduced"] == "0" or version_key(version) >= version_key(event["introduced"])
                elif "fixed" in event and inside and version_key(version) >= version_key(event["fixed"]):
                    inside = False
                elif "last_affected" in event and inside and version_key(version) > version_key(event["last_affected"]):
                    inside = False
            if inside:
                return True
    return False


@dataclass
class FeedFake:
    """OSV at `url` (/v1/…) and the KEV catalogue at `kev_url`, one local HTTP server."""

    records: dict[str, dict] = field(default_factory=dict)
    kev: dict = field(default_factory=dict)
    fail_osv: bool = False
    fail_kev: bool = False
    log: list[str] = field(default_factory=list)  # "POST /v1/querybatch 12" (queries), "GET /v1/vulns/ID"

    def __post_init__(self) -> None:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                fake._get(self)

            def do_POST(self) -> None:  # noqa: N802
                fake._post(self)

            def log_message(self, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self.kev_url = f"{self.url}/feeds/known_exploited_vulnerabilities.json"
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def osv_requests(self) -> int:
        return sum(1 for line in self.log if "/v1/" in line)

    def _get(self, handler: BaseHTTPRequestHandler) -> None:
        self.log.append(f"GET {handler.path}")
        if handler.path.startswith("/feeds/"):
            return (
                self._send(handler, 503, {"error": "unavailable"})
                if self.fail_kev
                else self._send(handler, 200, self.kev)
            )
        if self.fail_osv:
            return self._send(handler, 503, {"code": 14, "message": "unavailable"})
        if handler.path.startswith("/v1/vulns/"):
            record = self.records.get(unquote(handler.path.removeprefix("/v1/vulns/")))
            return (
                self._send(handler, 200, record)
                if record
                else self._send(handler, 404, {"code": 5, "message": "Bug not found."})
            )
        self._send(handler, 404, {"code": 5})

    def _post(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = json.loads(handler.rfile.read(length) or b"{}")
        queries = body.get("queries") or []
        self.log.append(f"POST {handler.path} {len(queries)}")
        if self.fail_osv:
            return self._send(handler, 503, {"code": 14, "message": "unavailable"})
        if handler.path != "/v1/querybatch" or len(queries) > 1000:
            return self._send(handler, 400, {"code": 3, "message": "Too many queries."})
        results = []
        for query in queries:
            purl = PackageURL.from_string(query["package"]["purl"])
            ecosystem = ECOSYSTEMS.get(purl.type, purl.type)
            sep = ":" if purl.type == "maven" else "/"
            name = f"{purl.namespace}{sep}{purl.name}" if purl.namespace else purl.name
            vulns = [
                {"id": r["id"], "modified": r["modified"]}
                for r in self.records.values()
                if affects(r, ecosystem, name, purl.version or "")
            ]
            results.append({"vulns": vulns} if vulns else {})
        self._send(handler, 200, {"results": results})

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)


def real_records() -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((DATA / "osv").glob("*.json"))}


def real_kev() -> dict:
    return json.loads((DATA / "kev.json").read_text())


@pytest.fixture
def feeds(settings) -> Iterator[FeedFake]:
    fake = FeedFake(records=real_records(), kev=real_kev())
    settings.PORTAL_OSV_URL = fake.url
    settings.PORTAL_KEV_URL = fake.kev_url
    settings.PORTAL_FEED_TIMEOUT = 5
    try:
        yield fake
    finally:
        fake.close()
