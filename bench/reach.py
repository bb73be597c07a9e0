"""The reach of a change in a large fleet, computed from the builds the pin read keeps.

    .venv/bin/python bench/reach.py [--repositories 40] [--apps 5000] [--rounds 200]

The target: under 200 ms for the reach of one change (`portal.delivery.reach.reach_of`), from
stored reads, in a fleet of 40 repositories and 5,000 applications. The fleet is what a platform
team's GitOps repositories hold: per repository, services with a Kustomize base each, one overlay
per environment (dev, staging, prod) over it, all over one shared component (labels, policies);
each application is one overlay on one cluster (three clusters per environment, applications
spread over them). The builds are written the way the pin read writes them (`keep_builds`, over
`Reads.as_stored()` of what each app builds; pins as `GitPin` rows), then ANALYZE runs so the
planner of PostgreSQL (or SQLite) has statistics, as autovacuum's analyze would give a live fleet.

Three changes are measured, each `--rounds` times: a tag in one service's prod overlay (reaches
one app per prod cluster), one service's base (every environment of that service: warnings), and
the shared component of a repository (every application of that repository: the worst reach).
Printed: p50, p95 and max in ms, the queries per reach, how many apps each reached. The floor:
one indexed single-row read of the same table (the cost of a round trip to the database), next to
nothing beside a reach.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import bench_database, percentile  # noqa: E402 - after the path

ENVIRONMENTS = ("dev", "staging", "prod")
CLUSTERS_PER_ENVIRONMENT = 3
TARGET_MS = 200.0


def fill(repositories: int, apps: int) -> dict[str, object]:
    """The fleet, its kept builds and pins; what the changes are measured on."""
    from django.db import connection
    from django.utils import timezone

    from forges.hosts import repository_key
    from forges.pins.layouts.app_reads import Reads
    from gitops.models import GitOpsApp
    from portal.delivery.models import GitPin, GitPinRead
    from portal.delivery.reach import keep_builds
    from portal.kernel.catalog.models import Cluster, Environment, Service

    clusters = {}
    for order, name in enumerate(ENVIRONMENTS):
        environment = Environment.objects.create(name=name, order=order, production=name == "prod")
        clusters[name] = [Cluster.objects.create(name=f"{name}-{i}", environment=environment)
                          for i in range(CLUSTERS_PER_ENVIRONMENT)]
    per_repository = apps // repositories
    services_per_repository = max(1, per_repository // (len(ENVIRONMENTS) * CLUSTERS_PER_ENVIRONMENT))
    rows, builds, pins, repos = [], {}, [], []
    for r in range(repositories):
        url = f"https://github.com/acme/gitops-{r:02d}.git"
        repos.append(url)
        for a in range(per_repository):
            service = f"svc-{r:02d}-{a % services_per_repository:03d}"
            environment = ENVIRONMENTS[(a // services_per_repository) % len(ENVIRONMENTS)]
            cluster = clusters[environment][(a // (services_per_repository * len(ENVIRONMENTS)))
                                            % CLUSTERS_PER_ENVIRONMENT]
            name = f"{service}-{environment}-{a}"
            rows.append(GitOpsApp(cluster=cluster, read_from=cluster, tool="argo", kind="Application",
                                  namespace="argocd", name=name, repo_url=url,
                                  path=f"overlays/{environment}/{service}", target_revision="HEAD"))
            builds[name] = Reads(whole={
                f"overlays/{environment}/{service}/kustomization.yaml", f"base/{service}/kustomization.yaml",
                f"base/{service}/deployment.yaml", "components/common/kustomization.yaml",
                "components/common/labels.yaml"}, overridden={(f"base/{service}/deployment.yaml", 18)}).as_stored()
            pins.append((name, service, f"overlays/{environment}/{service}/kustomization.yaml"))
    GitOpsApp.objects.bulk_create(rows, batch_size=1000)
    ids = dict(GitOpsApp.objects.values_list("name", "id"))
    services = {name: Service.objects.create(name=name, image_repository=f"ghcr.io/acme/{name}").pk
                for name in sorted({service for _, service, _ in pins})}
    GitPinRead.objects.bulk_create([GitPinRead(app_id=pk, branch="main") for pk in ids.values()], batch_size=1000)
    now = timezone.now()
    GitPin.objects.bulk_create([GitPin(app_id=ids[name], service_id=services[service], version="1.4.0", path=path,
                                       line=11, read_at=now) for name, service, path in pins], batch_size=1000)
    by_repository = {url: {} for url in repos}
    for row in rows:
        by_repository[row.repo_url][ids[row.name]] = builds[row.name]
    started = time.perf_counter()
    for url, kept in by_repository.items():
        keep_builds(kept, repository_key(url))
    kept_ms = (time.perf_counter() - started) * 1000
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return {"repository": repos[0], "service": "svc-00-000", "kept_ms": kept_ms, "apps": len(rows),
            "services": len(services), "per_repository": per_repository}


def measure(fleet: dict[str, object], rounds: int) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from portal.delivery.models import GitPinRead
    from portal.delivery.planner import UPGRADE, Change, MovedLine
    from portal.delivery.reach import reach_of

    repository, service = str(fleet["repository"]), str(fleet["service"])
    own = GitPinRead.objects.filter(app__name__startswith=f"{service}-prod-").values_list("app_id", flat=True)
    change = Change(kind=UPGRADE, services=(service,), environment="prod", repository=repository,
                    base_branch="main", path=f"overlays/prod/{service}", image=f"ghcr.io/acme/{service}",
                    from_version="1.4.0", to_version="1.5.0", apps=tuple(own))
    changes = {
        "prod overlay": f"overlays/prod/{service}/kustomization.yaml",
        "service base": f"base/{service}/deployment.yaml",
        "shared component": "components/common/labels.yaml",
    }
    print(f"  {'edited file':18} {'reached':>8} {'warnings':>9} {'queries':>8} {'p50 ms':>8} {'p95 ms':>8} "
          f"{'max ms':>8}  under {TARGET_MS:.0f} ms")
    for label, path in changes.items():
        moved = [MovedLine(path, 11, service, "1.4.0", "1.5.0")]
        with CaptureQueriesContext(connection) as queries:
            reach = reach_of([change], moved, repository, "main")
        samples = []
        for _ in range(rounds):
            started = time.perf_counter()
            reach_of([change], moved, repository, "main")
            samples.append((time.perf_counter() - started) * 1000)
        verdict = "yes" if percentile(samples, 0.95) < TARGET_MS else "NO"
        print(f"  {label:18} {len(reach.reached):8} {len(reach.warnings):9} {len(queries.captured_queries):8} "
              f"{percentile(samples, 0.5):8.2f} {percentile(samples, 0.95):8.2f} {max(samples):8.2f}  {verdict}")
    floor = []
    first = GitPinRead.objects.values_list("app_id", flat=True).first()
    for _ in range(rounds):
        started = time.perf_counter()
        GitPinRead.objects.filter(app_id=first).values_list("id", flat=True).first()
        floor.append((time.perf_counter() - started) * 1000)
    print(f"  floor (one indexed row of GitPinRead): p50 {percentile(floor, 0.5):.3f} ms, "
          f"p95 {percentile(floor, 0.95):.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repositories", type=int, default=40)
    parser.add_argument("--apps", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    with bench_database() as vendor:
        fleet = fill(args.repositories, args.apps)
        print(f"database: {vendor}; {fleet['apps']} applications in {args.repositories} repositories "
              f"({fleet['per_repository']} each, {fleet['services']} services), "
              f"{len(ENVIRONMENTS) * CLUSTERS_PER_ENVIRONMENT} clusters in {len(ENVIRONMENTS)} environments")
        print(f"builds kept with keep_builds in {fleet['kept_ms']:.0f} ms; ANALYZE run after filling; "
              f"{args.rounds} rounds per change")
        measure(fleet, args.rounds)


if __name__ == "__main__":
    main()
