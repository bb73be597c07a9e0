"""Pull request preview latency, with and without forges.treecache, in one run.

    .venv/bin/python bench/preview.py [--rounds 15] [--repositories 40] [--files 400]

Two fleets, each previewed as a person does: every "Open PR" offer /updates shows, followed with
Django's test client (GET /pr/preview?…, the whole view: parse, plan, render), as a member.
- the demo, loaded as `make run` loads it (tests/delivery/test_demo_charts.py's fixture: the demo
  GitOps repository committed into a bare repository and read through the demo forge, `git`);
- a fleet of --repositories repositories on the test suite's GitHub fake (bench/fleet_forge.py, a
  process of its own, so the forge's CPU is not the portal's; its files are bench/fleet.py's forge
  mode's — per service a Kustomize overlay over a base — plus --files other manifests per
  repository, as a team's GitOps repository holds), one Argo CD Application per service, each a
  patch release behind.
Each round previews every offer twice, cache off (PORTAL_FORGE_TREE_CACHE_BYTES=0: every tree and
file read from the forge, as before) then on (after one warming pass: a commit already read), so
both see the same machine minute by minute. Printed per fleet: p50/p95 of each, their ratio, and
the forge requests per preview (the fake's own counts, GitHub fleet only).

The floor: GET /accounts/login/ through the same client, the harness's own cost per request, next
to nothing beside a preview.
"""

from __future__ import annotations

import argparse
import html
import io
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import ROOT, bench_database, percentile  # noqa: E402 - after the path

OFFER = re.compile(r'href="(/pr/preview\?[^"]+)"')
MIB = 1024 * 1024


def offers(client) -> list[str]:
    """Every preview link /updates shows, once each."""
    response = client.get("/updates")
    assert response.status_code == 200, response.status_code
    return list(dict.fromkeys(html.unescape(u) for u in OFFER.findall(response.content.decode())))


def timed(client, url: str) -> float:
    started = time.perf_counter()
    response = client.get(url)
    elapsed = (time.perf_counter() - started) * 1000
    assert response.status_code == 200, (url, response.status_code)
    return elapsed


def measure(client, urls: list[str], rounds: int, count: Callable[[], int] | None = None) -> dict[str, object]:
    from django.conf import settings

    from forges.treecache import commits

    on_bytes = settings.PORTAL_FORGE_TREE_CACHE_BYTES or 64 * MIB
    samples: dict[str, list[float]] = {"off": [], "on": []}
    requests: dict[str, int] = {"off": 0, "on": 0}
    commits.clear()
    settings.PORTAL_FORGE_TREE_CACHE_BYTES = on_bytes
    for url in urls:  # warming: each commit read once, as the first preview after a merge does
        timed(client, url)
    for _ in range(rounds):
        for url in urls:
            for mode, limit in (("off", 0), ("on", on_bytes)):
                settings.PORTAL_FORGE_TREE_CACHE_BYTES = limit
                before = count() if count else 0
                samples[mode].append(timed(client, url))
                requests[mode] += (count() - before) if count else 0
    settings.PORTAL_FORGE_TREE_CACHE_BYTES = on_bytes
    return {"samples": samples, "requests": requests, "kept_mib": commits.size / MIB}


def report(name: str, urls: list[str], result: dict[str, object], floor: list[float]) -> None:
    samples: dict[str, list[float]] = result["samples"]  # type: ignore[assignment]
    requests: dict[str, int] = result["requests"]  # type: ignore[assignment]
    off, on = samples["off"], samples["on"]
    p50 = (percentile(off, 0.5), percentile(on, 0.5))
    p95 = (percentile(off, 0.95), percentile(on, 0.95))
    print(f"\n{name}: {len(urls)} offers on /updates, {len(off)} previews each way")
    print(f"  {'':22} {'p50 ms':>9} {'p95 ms':>9} {'forge requests/preview':>24}")
    for mode, label in (("off", "before (cache off)"), ("on", "after (cache on)")):
        per = f"{requests[mode] / len(samples[mode]):.1f}" if requests[mode] else "—"
        print(f"  {label:22} {percentile(samples[mode], 0.5):9.1f} {percentile(samples[mode], 0.95):9.1f} "
              f"{per:>24}")
    print(f"  {'ratio before/after':22} {p50[0] / p50[1]:9.2f} {p95[0] / p95[1]:9.2f}")
    print(f"  kept by forges.treecache: {result['kept_mib']:.2f} MiB; floor (GET /accounts/login/): "
          f"p50 {percentile(floor, 0.5):.1f} ms")


def member_client():
    from django.contrib.auth import get_user_model
    from django.test import Client

    from portal.kernel.accounts.roles import Role, grant

    user, _ = get_user_model().objects.get_or_create(username="bench")
    grant(user, Role.MEMBER)
    client = Client()
    client.force_login(user)
    return client


def floor_of(client, rounds: int) -> list[float]:
    client.get("/accounts/login/")
    return [timed(client, "/accounts/login/") for _ in range(rounds)]


def demo(rounds: int) -> None:
    from django.conf import settings
    from django.core.management import call_command

    from forges.demo import build_demo_repo

    with tempfile.TemporaryDirectory() as var:
        settings.DEMO_MODE = True
        settings.VAR_DIR = Path(var)
        build_demo_repo(Path(var) / "demo-gitops.git")
        quiet = io.StringIO()
        call_command("load_demo", verbosity=0, stdout=quiet)
        call_command("load_demo_releases", verbosity=0, stdout=quiet)
        client = member_client()
        urls = offers(client)
        report("demo (demo forge: git over examples/gitops-repo)", urls, measure(client, urls, rounds),
               floor_of(client, 50))
        call_command("flush", interactive=False, verbosity=0)
        settings.DEMO_MODE = False


def github_fleet(rounds: int, repositories: int, padding: int) -> None:
    from django.conf import settings
    from django.utils import timezone
    from fleet import SERVICES, forge_repositories, repository_of

    from portal.kernel.catalog.models import Cluster, Environment, Service
    from portal.releases.models import Release
    from tests.fixtures.seed import seed_app

    with tempfile.TemporaryDirectory() as work:
        files = forge_repositories(repositories)
        for r, repo in enumerate(files.values()):
            for i in range(padding):  # the rest of a team's repository: read with the tree, never opened
                repo[f"platform/team-{r:02d}/component-{i:03d}/deployment.yaml"] = (
                    f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: c{i:03d}\n")
        forge = Forge(Path(work), files)
        try:
            settings.PORTAL_GITOPS_GITHUB_API, settings.PORTAL_GITOPS_TOKEN = forge.api, forge.token
            prod = Environment.objects.create(name="prod", order=1, production=True)
            cluster = Cluster.objects.create(name="prod-eu-1", environment=prod,
                                             connection=Cluster.Connection.MANIFESTS)
            now = timezone.now()
            for s in range(SERVICES):
                name = f"svc{s:03d}"
                service = Service.objects.create(name=name, image_repository=f"ghcr.io/acme/{name}")
                for tag in (f"1.{s % 5}.0", f"1.{s % 5}.1"):
                    Release.objects.create(service=service, tag=tag, version=tag, seen_at=now)
                seed_app(cluster, f"{name}-prod", service=service, version=f"1.{s % 5}.0",
                         repo_url=f"{forge.web}/acme/{repository_of(s, repositories)}.git",
                         path=f"apps/{name}/prod")
            client = member_client()
            urls = offers(client)
            print(f"\nGitHub fake at {forge.api}: {repositories} repositories, "
                  f"{sum(len(f) for f in files.values()) // repositories} files each")
            report(f"{repositories}-repository fleet (GitHub fake)", urls,
                   measure(client, urls, rounds, forge.requests), floor_of(client, 50))
        finally:
            forge.stop()


class Forge:
    """bench/fleet_forge.py as a process, holding `files` (repository -> path -> text)."""

    def __init__(self, work: Path, files: dict[str, dict[str, str]]) -> None:
        import os
        import subprocess
        import uuid

        import urllib3

        self.token = "bench-preview-token-" + uuid.uuid4().hex
        spec = work / "forge.json"
        spec.write_text(json.dumps({"token_env": "BENCH_PREVIEW_FORGE_TOKEN", "repositories": files}))
        self.process = subprocess.Popen([sys.executable, str(ROOT / "bench" / "fleet_forge.py"), str(spec)],
                                        env=os.environ | {"BENCH_PREVIEW_FORGE_TOKEN": self.token},
                                        stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline() if self.process.stdout else ""
        if not line.strip().isdigit():
            raise SystemExit("the forge fake did not start")
        self.web = f"http://127.0.0.1:{int(line)}"
        self.api = self.web + "/api/v3"  # as GitHub Enterprise Server serves its API
        self.http = urllib3.PoolManager(maxsize=1)

    def requests(self) -> int:
        """Every request the fake answered so far."""
        counts = json.loads(self.http.request("GET", self.web + "/_bench/counts").data)["repositories"]
        return sum(n for kinds in counts.values() for n in kinds.values())

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15, help="passes over every offer, each way")
    parser.add_argument("--repositories", type=int, default=40)
    parser.add_argument("--files", type=int, default=400, help="other manifests per repository")
    parser.add_argument("--skip-demo", action="store_true")
    parser.add_argument("--skip-fleet", action="store_true")
    args = parser.parse_args()
    with bench_database() as vendor:
        print(f"database: {vendor}; rounds: {args.rounds}")
        if not args.skip_demo:
            demo(args.rounds)
        if not args.skip_fleet:
            github_fleet(args.rounds, args.repositories, args.files)


if __name__ == "__main__":
    main()
