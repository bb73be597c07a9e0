"""Benchmark: GET /api/v1/gitops, pages of 100 over a fleet of 10,000 applications.

    .venv/bin/python bench/api.py [--apps 10000] [--clusters 10] [--rounds 20]

Seeds a throw-away test database (SQLite, or a new database on the server DATABASE_URL
names, dropped afterwards) with tests.fixtures.seed.seed_fleet plus version changes,
then times authenticated requests through Django's full stack (token auth, throttle,
serializer, JSON) and prints p50/p95 per kind of page. Target: p95 under 200 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from datetime import timedelta

from harness import bench_database, percentile

os.environ.setdefault("PORTAL_API_RATE", "1000000/minute")


def seed(apps: int, clusters: int) -> str:
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from gitops.models import VersionChange
    from portal.kernel.accounts import tokens
    from portal.kernel.accounts.roles import Role, grant
    from portal.kernel.catalog.models import Cluster, Environment, Service
    from tests.fixtures.seed import seed_fleet

    stamp = str(int(time.time()))
    envs = [Environment.objects.create(name=f"bench-{stamp}-{name}", order=i) for i, name in
            enumerate(("dev", "staging", "prod"))]
    made = [Cluster.objects.create(name=f"bench-{stamp}-c{i}", environment=envs[i % 3],
                                   connection=Cluster.Connection.MANIFESTS) for i in range(clusters)]
    services = [Service.objects.create(name=f"bench-{stamp}-svc{i}", image_repository=f"ghcr.io/bench/svc{i}")
                for i in range(40)]
    seed_fleet(made, services, apps_per_cluster=apps // clusters)
    now = timezone.now()
    VersionChange.objects.bulk_create([
        VersionChange(service=service, environment=cluster.environment, cluster=cluster, from_version="1.0.0",
                      to_version="1.1.0", at=now - timedelta(hours=2, minutes=i))
        for cluster in made for i, service in enumerate(services)
    ])
    user = get_user_model().objects.create_user(f"bench-{stamp}")
    grant(user, Role.VIEWER)
    return tokens.issue(user, "bench")[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=10_000)
    parser.add_argument("--clusters", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    with bench_database():
        run(args)


def run(args: argparse.Namespace) -> None:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from gitops.models import GitOpsApp

    started = time.perf_counter()
    token = seed(args.apps, args.clusters)
    print(f"seeded {GitOpsApp.objects.count():,} apps in {time.perf_counter() - started:.1f} s "
          f"({connection.vendor})")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    env = GitOpsApp.objects.values_list("cluster__environment__name", flat=True).first()
    fifth = client.get("/api/v1/gitops", {"page_size": "100"}).json()
    for _ in range(3):  # page 4; its `next` is page 5
        fifth = client.get(fifth["next"]).json()
    pages: dict[str, tuple[str, dict[str, str]]] = {
        "first page, problems first": ("/api/v1/gitops", {"page_size": "100"}),
        "5th page via cursors": (fifth["next"], {}),
        "environment + needs_attention=false": ("/api/v1/gitops", {"page_size": "100", "environment": env,
                                                                   "needs_attention": "false"}),
        "sort=-sync_since": ("/api/v1/gitops", {"page_size": "100", "sort": "-sync_since"}),
        "sort=name, tool=argo": ("/api/v1/gitops", {"page_size": "100", "sort": "name", "tool": "argo"}),
    }
    print(f"{'page of 100':40} {'p50 ms':>8} {'p95 ms':>8} {'queries':>8}")
    for label, (url, params) in pages.items():
        client.get(url, params)  # warm: caches, token last_used_at
        samples = []
        for _ in range(args.rounds):
            with CaptureQueriesContext(connection) as queries:
                begin = time.perf_counter()
                response = client.get(url, params)
                samples.append((time.perf_counter() - begin) * 1000)
            assert response.status_code == 200, response.content[:300]
            assert len(response.json()["results"]) == 100, label
        print(f"{label:40} {statistics.median(samples):8.1f} {percentile(samples, 0.95):8.1f} "
              f"{len(queries.captured_queries):8d}")


if __name__ == "__main__":
    main()
