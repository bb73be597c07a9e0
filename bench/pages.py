"""Page benchmark: server time per page (p50, p95) with 10,000 applications on 40 clusters
and 300 services × 4 environments, next to the same pages with 100 applications.

    .venv/bin/python bench/pages.py [--repeat 30]
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python bench/pages.py
"""

from __future__ import annotations

import argparse
import time

from harness import bench_database, percentile

# The filtered page narrows the whole table (tool, status, text search) to a full page in
# both fleets, so the two figures differ by the size of what is searched, not by how many
# rows are drawn. The attention view is printed for information only: it draws no row in
# the small fleet and 40 in the large one, so its two figures are not a pair to compare.
UNPAIRED = {"/gitops (attention)"}
PAGES = {
    "/gitops (first page)": "/gitops",
    "/gitops (filtered)": "/gitops?tool=argo&status=healthy&q=svc0",
    "/gitops (attention)": "/gitops?environment=prod&status=degraded&attention=1&q=svc1",
    "/matrix": "/matrix",
    "/ (overview)": "/",
}


def seed(apps: int, clusters_count: int, services_count: int) -> None:
    from gitops.models import GitOpsApp, RunningVersion, Workload
    from portal.catalog.models import Cluster, Environment, Service
    from tests.fixtures.seed import seed_fleet

    GitOpsApp.objects.all().delete()
    RunningVersion.objects.all().delete()
    Workload.objects.all().delete()
    Cluster.objects.all().delete()
    Service.objects.all().delete()
    Environment.objects.all().delete()
    envs = [Environment.objects.create(name=name, order=i, production=name == "prod")
            for i, name in enumerate(["dev", "qa", "staging", "prod"])]
    clusters = [Cluster.objects.create(name=f"cluster-{n:02d}", environment=envs[n % 4],
                                       connection=Cluster.Connection.MANIFESTS) for n in range(clusters_count)]
    services = Service.objects.bulk_create(
        Service(name=f"svc{i:03d}", image_repository=f"ghcr.io/acme/svc{i:03d}") for i in range(services_count)
    )
    services = list(Service.objects.order_by("id"))
    seed_fleet(clusters, services, apps_per_cluster=apps // clusters_count)
    from django.db import connection

    if connection.vendor == "postgresql":
        # Planner statistics as autovacuum keeps them on a live database; a table filled a
        # moment ago has none, and its plans would measure that instead of the pages.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


def drawn(html: str) -> int:
    """Rows a page drew: list rows, matrix lines or tiles."""
    return html.count('<tr class="app') or html.count('class="cell-line"') or html.count('<article class="tile')


def use(database: str) -> None:
    """Point Django at one of the two fleets' databases (the next query reconnects)."""
    from django.db import connection

    connection.close()
    connection.settings_dict["NAME"] = database


def measure(client, databases: dict[str, str], repeat: int) -> dict[str, dict[str, tuple[float, float, int]]]:
    """fleet -> page -> (p50, p95, rows drawn). The fleets take turns, a few requests per page
    each turn, so that this machine's speed, which drifts from minute to minute, weighs on
    both alike and the ratio compares the pages rather than two moments."""
    samples: dict[str, dict[str, list[float]]] = {fleet: {label: [] for label in PAGES} for fleet in databases}
    rows: dict[str, dict[str, int]] = {fleet: {} for fleet in databases}
    per_turn = 5
    for _ in range(max(1, -(-repeat // per_turn))):
        for fleet, database in databases.items():
            use(database)
            for label, url in PAGES.items():
                rows[fleet][label] = drawn(client.get(url).content.decode())  # warm: connection, caches
                for _ in range(per_turn):
                    started = time.perf_counter()
                    response = client.get(url)
                    samples[fleet][label].append((time.perf_counter() - started) * 1000)
                    assert response.status_code == 200, (url, response.status_code)
    return {
        fleet: {
            label: (percentile(times, 0.5), percentile(times, 0.95), rows[fleet][label])
            for label, times in pages.items()
        }
        for fleet, pages in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=30, help="requests per page and fleet")
    args = parser.parse_args()
    with bench_database() as vendor:
        from django.contrib.auth import get_user_model
        from django.db import connection
        from django.test import Client

        from portal.accounts.roles import Role, grant
        from portal.wsgi import freeze_startup_objects

        user = get_user_model().objects.create_user("bench")
        grant(user, Role.VIEWER)
        client = Client()
        client.force_login(user)

        # Two databases: the same 300 services, with 100 applications on 4 clusters and with
        # 10,000 on 40. What grows is the number of applications.
        small = connection.settings_dict["NAME"]
        seed(100, 4, 300)
        connection.creation.clone_test_db(suffix="large", verbosity=0)
        large = connection.creation.get_test_db_clone_settings("large")["NAME"]
        use(large)
        seed(10_000, 40, 300)
        try:
            freeze_startup_objects()  # as a web worker does when it starts (portal/wsgi.py)
            figures = measure(client, {"small": small, "large": large}, args.repeat)
        finally:
            use(small)
            connection.creation.destroy_test_db(small, verbosity=0, suffix="large")

        print(f"database: {vendor}; {args.repeat} requests per page and fleet, the fleets taking turns; "
              "server time in ms (Django test client)")
        print(f"{'page':22} {'100 apps p50/p95 (rows)':>26} {'10,000 apps p50/p95 (rows)':>29} {'ratio p95':>10}")
        for label in PAGES:
            (s50, s95, srows), (l50, l95, lrows) = figures["small"][label], figures["large"][label]
            ratio = "   (n/a)" if label in UNPAIRED else f"{l95 / s95:9.2f}x"
            print(f"{label:22} {s50:8.1f} /{s95:7.1f} ({srows:5d}) {l50:11.1f} /{l95:8.1f} ({lrows:5d}) {ratio}")
        print("(n/a): the two fleets draw different rows there (see PAGES in bench/pages.py)")


if __name__ == "__main__":
    main()
