"""Collection benchmark: a synthetic fleet served over HTTP by the Kubernetes API emulator,
polled end to end (official client → collectors → store), against the floor of only
fetching and JSON-parsing the same responses.

Two shapes, printed side by side: the standalone fleet (an Argo CD in every cluster, each
app on the cluster that lists it, its Deployment beside it) and a hub (one Argo CD listing
every app, each placed on its destination cluster by `spec.destination.server`, the
destinations not read, so versions come from `status.summary.images`). One hub poll is
one big list; what it adds is placing each app and writing versions for 40 clusters.

    .venv/bin/python bench/collect.py [--clusters 20] [--apps 500] [--hub-apps 4000] [--hub-destinations 40]
        [--health-objects 1000] [--only-health]

Beside the standalone figures, the steady state of a real fleet: a poll finding 30 % of the
apps re-stamped by Argo CD (status.reconciledAt and resourceVersion only), CPU per poll before
(every object collected) and after (only those apps, gitops.derive.unchanged.ObjectVersions), against
the floor's CPU.

A third part measures custom-resource health rules (issue 22) through the poll path: N
DecisionModels, each deployed by its own app, judged by the Argo CD Lua check in argocd-cm
and by a Kustomization's healthCheckExprs (CEL), against the same fleet with no rule (the
kind is then not even listed). Printed as ms per object: the poll's extra time, and the
evaluation alone (`judge_apps`).
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python bench/collect.py
"""

from __future__ import annotations

import argparse
import json
import time
import uuid

from harness import bench_database, peak_rss_mib

from tests.fakes.fleet import SERVICES, application, deployment  # noqa: F401 - the fleet's shapes, shared with tests


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clusters", type=int, default=20)
    parser.add_argument("--apps", type=int, default=500)
    parser.add_argument("--hub-apps", type=int, default=4000)
    parser.add_argument("--hub-destinations", type=int, default=40)
    parser.add_argument("--health-objects", type=int, default=1000)
    parser.add_argument("--only-health", action="store_true", help="only the health-rule part")
    args = parser.parse_args()
    if args.only_health:
        with bench_database():
            health_rule_cost(args.health_objects)
        return

    from tests.fakes.kube_emulator import KubeEmulator

    with bench_database() as vendor, KubeEmulator() as emulator:
        import os

        import urllib3

        from gitops import kinds, polling
        from portal.kernel.catalog.models import Cluster, Environment, Service

        os.environ["BENCH_KUBE_TOKEN"] = emulator.token
        for spec in kinds.KINDS:
            emulator.install(spec.api_version(spec.versions[0]), spec.plural, spec.kind)
        emulator.add_all(application(i, "bench") for i in range(args.apps))
        emulator.add_all(deployment(i) for i in range(args.apps))
        for spec in kinds.KINDS:
            emulator.warm(spec, 500)
        env = Environment.objects.create(name="prod", order=3, production=True)
        Service.objects.bulk_create(
            Service(name=f"svc{i:02d}", image_repository=f"ghcr.io/acme/svc{i:02d}") for i in range(SERVICES)
        )
        clusters = [
            Cluster.objects.create(name=f"c{n:02d}", environment=env, connection=Cluster.Connection.API,
                                   api_url=emulator.url, token_env="BENCH_KUBE_TOKEN")
            for n in range(args.clusters)
        ]
        total_apps = args.clusters * args.apps

        # Floor: the same list requests, fetched and json-parsed, nothing else.
        http = urllib3.PoolManager()

        def list_floor(api: KubeEmulator, times: int) -> float:
            headers = {"Authorization": f"Bearer {api.token}"}
            started = time.perf_counter()
            for _ in range(times):
                for spec in kinds.KINDS:
                    token = ""
                    while True:
                        query = "?limit=500" + (f"&continue={token}" if token else "")
                        body = http.request("GET", api.url + spec.list_path(spec.versions[0]) + query,
                                            headers=headers).data
                        page = json.loads(body)
                        token = (page.get("metadata") or {}).get("continue") or ""
                        if not token:
                            break
            return time.perf_counter() - started

        floor_cpu = time.process_time()
        floor = list_floor(emulator, len(clusters))
        floor_cpu = time.process_time() - floor_cpu

        write_seconds = 0.0
        real_write = polling.write  # the store's one write transaction, as the poll calls it

        def timed_write(*a, **kw):
            nonlocal write_seconds
            t = time.perf_counter()
            try:
                return real_write(*a, **kw)
            finally:
                write_seconds += time.perf_counter() - t

        polling.write = timed_write
        started = time.perf_counter()
        for cluster in clusters:
            report = polling.poll(cluster)
            assert report.ok, report.error
        first = time.perf_counter() - started
        write_first = write_seconds

        write_seconds = 0.0  # a steady-state poll: everything exists, little changes
        started = time.perf_counter()
        for cluster in clusters:
            assert polling.poll(cluster).ok
        second = time.perf_counter() - started
        write_second = write_seconds

        # Argo CD writes status.reconciledAt on every reconciliation (every 3 minutes by
        # default): with a 60-second poll about a third of the apps have changed each time.
        # Here all of them have, the worst case of a steady state.
        emulator.add_all(application(i, "bench", reconciled_at="2026-11-29T09:03:00Z") for i in range(args.apps))
        write_seconds = 0.0
        started = time.perf_counter()
        for cluster in clusters:
            assert polling.poll(cluster).ok
        reconciled = time.perf_counter() - started
        write_reconciled = write_seconds

        # The steady state of a real fleet: each poll finds ~30 % of the apps re-stamped (reconciledAt
        # and resourceVersion only), nothing else changed. Before: every such poll collected all of
        # the cluster's objects (the per-object path switched off); after: only the re-stamped apps.
        def timed_polls() -> tuple[float, float, float, int]:
            nonlocal write_seconds
            write_seconds = 0.0
            wall, cpu = time.perf_counter(), time.process_time()
            collected = 0
            for cluster in clusters:
                report = polling.poll(cluster)
                assert report.ok, report.error
                collected += report.collected if report.collected is not None else args.apps
            return time.perf_counter() - wall, time.process_time() - cpu, write_seconds, collected

        restamp = [i for i in range(args.apps) if i % 10 < 3]
        real_changed = polling.collect_changed
        polling.collect_changed = lambda *a, **kw: None  # type: ignore[assignment]
        emulator.add_all(application(i, "bench", reconciled_at="2026-11-29T09:06:00Z") for i in restamp)
        before_30 = timed_polls()
        polling.collect_changed = real_changed
        emulator.add_all(application(i, "bench", reconciled_at="2026-11-29T09:09:00Z") for i in restamp)
        after_30 = timed_polls()

        from gitops.models import GitOpsApp

        stored = GitOpsApp.objects.count()
        assert stored == total_apps, stored
        print(f"database: {vendor}; fleet: {args.clusters} clusters x {args.apps} apps "
              f"(+{args.apps} Deployments each) = {total_apps} apps")
        # The emulator builds every page in Python: this floor is mostly the emulator's own cost,
        # so ratios to it understate the portal's. bench/fleet.py measures against a server
        # that costs next to nothing (nginx serving pre-serialised lists).
        print(f"floor (this in-process emulator serving the lists + fetch + JSON parse; mostly the emulator): "
              f"{floor:.2f} s, {total_apps / floor:,.0f} apps/s")
        print(f"end to end, first poll (all inserts): {first:.2f} s, {total_apps / first:,.0f} apps/s, "
              f"{first / floor:.2f}x floor; DB write {write_first:.2f} s")
        print(f"end to end, next poll (nothing changed): {second:.2f} s, {total_apps / second:,.0f} apps/s, "
              f"{second / floor:.2f}x floor; DB write {write_second:.2f} s")
        print(f"end to end, every app reconciled:    {reconciled:.2f} s, {total_apps / reconciled:,.0f} apps/s, "
              f"{reconciled / floor:.2f}x floor; DB write {write_reconciled:.2f} s")
        n_clusters = len(clusters)
        print(f"floor CPU (same lists, this process: emulator + fetch + parse): {floor_cpu:.2f} s, "
              f"{floor_cpu / n_clusters * 1000:.0f} ms per cluster")
        for what, (wall, cpu, write, collected) in (("before (all collected)", before_30),
                                                    ("after (re-stamped only)", after_30)):
            print(f"30 % re-stamped, {what + ':':<25} {wall / n_clusters * 1000:.0f} ms/poll wall, "
                  f"{cpu / n_clusters * 1000:.0f} ms/poll CPU = {cpu / floor_cpu:.2f}x floor CPU; "
                  f"apps collected {collected}; DB write {write:.2f} s")
        print(f"30 % re-stamped, CPU per poll after / before: {after_30[1] / before_30[1]:.2f}")
        print(f"peak RSS: {peak_rss_mib():.0f} MiB")

        # The hub fleet: one Argo CD listing every app, each deploying to one of N destination
        # clusters by server URL. The destinations are in the catalog, not read: each app's
        # versions are written for its destination from status.summary.images.
        with KubeEmulator() as hub_api:
            os.environ["BENCH_HUB_TOKEN"] = hub_api.token
            for spec in kinds.KINDS:
                hub_api.install(spec.api_version(spec.versions[0]), spec.plural, spec.kind)
            servers = [f"https://dest-{n:02d}.bench.internal:6443" for n in range(args.hub_destinations)]

            def hub_apps(reconciled_at: str) -> list[dict]:
                return [application(i, "hub", reconciled_at, server=servers[i % len(servers)])
                        for i in range(args.hub_apps)]

            hub_api.add_all(hub_apps("2026-11-29T09:00:00Z"))
            for spec in kinds.KINDS:
                hub_api.warm(spec, 500)
            hub = Cluster.objects.create(name="hub", environment=env, connection=Cluster.Connection.API,
                                         api_url=hub_api.url, token_env="BENCH_HUB_TOKEN")
            destinations = Cluster.objects.bulk_create(
                Cluster(name=f"dest-{n:02d}", environment=env, connection=Cluster.Connection.NONE, api_url=server)
                for n, server in enumerate(servers)
            )
            hub_floor = list_floor(hub_api, 1)

            def hub_poll() -> tuple[float, float]:
                nonlocal write_seconds
                write_seconds = 0.0
                started = time.perf_counter()
                report = polling.poll(hub)
                assert report.ok, report.error
                return time.perf_counter() - started, write_seconds

            hub_first, hub_write_first = hub_poll()
            hub_second, hub_write_second = hub_poll()
            hub_api.add_all(hub_apps("2026-11-29T09:03:00Z"))
            hub_reconciled, hub_write_reconciled = hub_poll()

            from gitops.models import RunningVersion

            placed = GitOpsApp.objects.filter(read_from=hub).exclude(cluster=hub).count()
            assert placed == args.hub_apps, placed
            versions = RunningVersion.objects.filter(cluster__in=destinations, workload__isnull=True)
            reached = versions.values("cluster").distinct().count()
            assert reached == len(destinations), reached

        n = args.hub_apps
        print()
        print(f"hub fleet: 1 Argo CD listing {n} apps for {len(destinations)} destination clusters "
              f"(by server URL, not read: versions from status.summary.images)")
        print(f"floor (the same emulator serving the hub's lists + fetch + JSON parse): "
              f"{hub_floor:.2f} s, {n / hub_floor:,.0f} apps/s")
        for what, seconds, write in (
            ("first poll (all inserts)", hub_first, hub_write_first),
            ("next poll (nothing changed)", hub_second, hub_write_second),
            ("every app reconciled", hub_reconciled, hub_write_reconciled),
        ):
            print(f"end to end, {what + ':':<29}{seconds:.2f} s, {n / seconds:,.0f} apps/s, "
                  f"{seconds / hub_floor:.2f}x floor; DB write {write:.2f} s")
        print("beside the standalone fleet (apps/s, hub / standalone): "
              f"first {n / hub_first:,.0f} / {total_apps / first:,.0f}, "
              f"nothing changed {n / hub_second:,.0f} / {total_apps / second:,.0f}, "
              f"reconciled {n / hub_reconciled:,.0f} / {total_apps / reconciled:,.0f}")
        print(f"peak RSS: {peak_rss_mib():.0f} MiB")
        print()
        health_rule_cost(args.health_objects)


def health_rule_cost(count: int) -> None:
    """ms per custom resource for a Lua rule and a CEL rule, through the poll path."""
    import os

    from gitops import kinds, polling
    from gitops.collectors import custom_health as health
    from portal.kernel.catalog.models import ArgoCDInstance, Cluster, Environment
    from tests.fakes.kube_emulator import KubeEmulator
    from tests.gitops.decisionmodel import ALL_PHASES, GROUP, KIND, argocd_cm, decision_model, kustomization

    env = Environment.objects.get_or_create(name="health-bench", defaults={"order": 8})[0]
    judged = 0.0
    real_judge = polling.judge_apps

    def timed_judge(*a, **kw):
        nonlocal judged
        t = time.perf_counter()
        try:
            return real_judge(*a, **kw)
        finally:
            judged += time.perf_counter() - t

    polling.judge_apps = timed_judge
    # A whole poll of 1,000 Lua runs takes longer than the default budget on a slow machine:
    # the benchmark measures the rules, not the budget.
    health.POLL_BUDGET_SECONDS = 3600.0

    def models() -> list[dict]:
        out = []
        for i in range(count):
            obj = decision_model(ALL_PHASES[i % len(ALL_PHASES)], name=f"model-{i:04d}",
                                 generation=5 if i % 13 == 0 else 4)
            obj["metadata"]["uid"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"dm-{i}"))
            out.append(obj)
        return out

    def argo(i: int) -> dict:
        app = application(i, "health")
        app["metadata"]["name"] = f"dm-app-{i:04d}"
        app["metadata"]["uid"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"dm-app-{i}"))
        app["status"]["resources"] = [{"group": GROUP, "version": "v1", "kind": KIND, "namespace": "support",
                                       "name": f"model-{i:04d}", "status": "Synced"}]
        return app

    def flux(i: int, with_rule: bool) -> dict:
        ks = kustomization()
        ks["metadata"].update(name=f"dm-ks-{i:04d}", uid=str(uuid.uuid5(uuid.NAMESPACE_URL, f"dm-ks-{i}")))
        if not with_rule:
            del ks["spec"]["healthCheckExprs"]
        ks["status"] = {"observedGeneration": 3, "conditions": [
            {"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded", "message": "Applied",
             "lastTransitionTime": "2026-11-30T08:00:00Z"}],
            "inventory": {"entries": [{"id": f"support_model-{i:04d}_{GROUP}_{KIND}", "v": "v1"}]}}
        return ks

    def poll_once(name: str, objects: list[dict], with_instance: bool) -> tuple[float, float]:
        nonlocal judged
        with KubeEmulator() as api:
            os.environ["BENCH_HEALTH_TOKEN"] = api.token
            for spec in kinds.KINDS:
                api.install(spec.api_version(spec.versions[0]), spec.plural, spec.kind)
            api.install("v1", "configmaps", "ConfigMap")
            api.install(f"{GROUP}/v1", "decisionmodels", KIND)
            api.add_all(objects)
            cluster = Cluster.objects.create(name=name, environment=env, connection=Cluster.Connection.API,
                                             api_url=api.url, token_env="BENCH_HEALTH_TOKEN")
            if with_instance:
                ArgoCDInstance.objects.create(name=f"{name}-argocd", cluster=cluster, namespace="argocd")
            judged = 0.0
            started = time.perf_counter()
            report = polling.poll(cluster)
            assert report.ok, report.error
            return time.perf_counter() - started, judged

    argo_apps = [argo(i) for i in range(count)]
    poll_once("warm-up", [argocd_cm(), *models(), *argo_apps], True)  # imports, caches: not measured
    argo_bare, _ = poll_once("lua-none", [*models(), *argo_apps], True)
    lua_poll, lua_judge = poll_once("lua-rule", [argocd_cm(), *models(), *argo_apps], True)
    cel_poll, cel_judge = poll_once("cel-rule", [*models(), *(flux(i, True) for i in range(count))], False)
    flux_bare, _ = poll_once("cel-none", [*models(), *(flux(i, False) for i in range(count))], False)

    from gitops.models import GitOpsApp

    judged_apps = GitOpsApp.objects.filter(cluster__name__in=["lua-rule", "cel-rule"]).exclude(rule_health="").count()
    assert judged_apps == 2 * count, judged_apps
    print(f"health rules: {count} DecisionModels, each deployed by its own app, one poll each")
    for what, with_rule, bare, judge in (("Argo CD Lua (argocd-cm)", lua_poll, argo_bare, lua_judge),
                                         ("Flux CEL (healthCheckExprs)", cel_poll, flux_bare, cel_judge)):
        print(f"{what:<28} poll {with_rule:.2f} s vs {bare:.2f} s with no rule: "
              f"+{(with_rule - bare) * 1000 / count:.2f} ms per object; evaluation alone "
              f"{judge * 1000 / count:.2f} ms per object")


if __name__ == "__main__":
    main()
