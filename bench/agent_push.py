"""The portal's CPU per agent push against a pull poll of the same cluster, in one process.

    [DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres] .venv/bin/python bench/agent_push.py \\
        [--apps 100] [--clusters 5] [--rounds 3] [--profile first|unchanged|restamped] [--freeze] [--tree DIR]

An agent's push should cost the portal less than pulling the cluster would: the agent did the
reading. Here both happen against the same Kubernetes API emulator (tests/fakes/kube_emulator.py)
serving --apps Argo CD Applications and their Deployments (bench/collect.py's shapes):
--clusters clusters polled by the portal (connection "api"), and as many pushed by the
portal's own agent code (gitops.sources.agent.read_snapshot + encode, the agent's side, not counted)
to POST /api/v1/agents/<cluster>/snapshots through Django's test client (the whole request:
middleware, token, body, replay, store). Three steps, each measured as CPU seconds
(time.thread_time) per poll and per push:
- first: the first read of every cluster (everything written);
- unchanged: the same objects again, after one more read not counted (nothing to collect or
  write);
- restamped: 30 % of the apps re-stamped as Argo CD's reconciliation does (resourceVersion and
  status.reconciledAt), --rounds times.
CPU is the main thread's (time.thread_time): the poll and the test client's request run there,
the emulator answers in threads of its own, so a pull counts the portal's HTTP reads (the
official client, JSON parsing) but not the emulator's work. --profile prints cProfile's top
functions for the pushes of that step.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import pstats
import time
from pathlib import Path

from harness import ROOT, bench_database

SERVICES = 40


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--apps", type=int, default=100)
    parser.add_argument("--clusters", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", choices=("first", "unchanged", "restamped"))
    parser.add_argument("--freeze", action="store_true",
                        help="freeze start-up objects out of the garbage collector's sight first, as portal.wsgi "
                             "does in gunicorn's workers (celery's poll workers do not)")
    parser.add_argument("--tree", type=Path, default=ROOT,
                        help="the checkout whose portal to measure (e.g. an older commit, for a before figure)")
    args = parser.parse_args()

    from collect import application, deployment

    with bench_database(args.tree) as vendor:
        _measure(args, vendor, application, deployment)


def _measure(args: argparse.Namespace, vendor: str, application, deployment) -> None:
    from tests.fakes.kube_emulator import KubeEmulator  # of --tree, as every portal module is

    with KubeEmulator() as emulator:
        import os

        from django.test import Client

        from gitops import kinds, polling
        from gitops.sources.agent import SEQUENCE_HEADER, encode, read_snapshot
        from gitops.sources.kube import KubeSource
        from portal.kernel.catalog import agents
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
        # One more of each, read first and not counted: the first request imports the URLconf and
        # views, the first poll warms the collectors' caches.
        pulled = [Cluster.objects.create(name=f"pull-{n}", environment=env, connection=Cluster.Connection.API,
                                         api_url=emulator.url, token_env="BENCH_KUBE_TOKEN")
                  for n in range(args.clusters + 1)]
        pushed = []
        for n in range(args.clusters + 1):
            cluster = Cluster.objects.create(name=f"push-{n}", environment=env, connection=Cluster.Connection.AGENT)
            pushed.append((cluster.name, agents.issue(cluster, "bench")[1]))
        client = Client()

        def pull_all(clusters: list[Cluster]) -> tuple[float, str]:
            cpu = time.thread_time()
            reports = [polling.poll(cluster) for cluster in clusters]
            spent = time.thread_time() - cpu
            assert all(report.ok for report in reports), [report.error for report in reports]
            return spent, _kind(reports[0].unchanged, reports[0].collected)

        def push_all(clusters: list[tuple[str, str]], profile: bool = False) -> tuple[float, str]:
            bodies = []
            for name, token in clusters:
                source = KubeSource.from_url(emulator.url, emulator.token, name=name)
                snapshot = read_snapshot(name, source)
                bodies.append((name, token, snapshot["sequence"], encode(snapshot)))
            profiler = cProfile.Profile() if profile else None
            cpu = time.thread_time()
            for name, token, sequence, body in bodies:
                if profiler is not None:
                    profiler.enable()
                response = client.post(
                    f"/api/v1/agents/{name}/snapshots", data=body, content_type="application/json",
                    headers={"Authorization": f"Bearer {token}", "Content-Encoding": "gzip",
                             SEQUENCE_HEADER: str(sequence)})
                if profiler is not None:
                    profiler.disable()
                assert response.status_code == 200, (response.status_code, response.content[:300])
                answer = response.json()
            spent = time.thread_time() - cpu
            if profiler is not None:
                out = io.StringIO()
                stats = pstats.Stats(profiler, stream=out)
                stats.sort_stats("tottime").print_stats(25)
                stats.sort_stats("cumulative").print_stats(30)
                print(out.getvalue())
            return spent, _kind(answer.get("unchanged"), answer.get("collected")) if "unchanged" in answer else "?"

        if args.freeze:
            gc.collect()
            gc.freeze()
        pull_all(pulled[-1:])
        push_all(pushed[-1:])
        pulled, pushed = pulled[:-1], pushed[:-1]
        rows = []

        def step(label: str, prepare=None) -> None:
            if prepare is not None:
                prepare()
            pull_cpu, pull_kind = pull_all(pulled)
            push_cpu, push_kind = push_all(pushed, profile=args.profile == label)
            rows.append((label, pull_cpu, push_cpu, pull_kind, push_kind))

        step("first")
        # Not counted: the first reads register each cluster's Argo CD instance, a change of the
        # catalog every poll's digest covers, so every cluster's second read is a full one.
        pull_all(pulled)
        push_all(pushed)
        step("unchanged")
        restamp = [i for i in range(args.apps) if i % 10 < 3]
        for r in range(args.rounds):
            stamp = f"2026-11-29T09:{3 * (r + 1):02d}:00Z"
            step("restamped", lambda stamp=stamp: emulator.add_all(
                application(i, "bench", reconciled_at=stamp) for i in restamp))

        print(f"database: {vendor}; {args.clusters} clusters pulled and {args.clusters} pushed, "
              f"{args.apps} Applications + {args.apps} Deployments each")
        print(f"{'step':<11} {'pull CPU ms/poll':>17} {'push CPU ms/push':>17} {'push/pull':>10}  "
              "poll kind (pull, push)")
        for label in ("first", "unchanged", "restamped"):
            mine = [row for row in rows if row[0] == label]
            count = len(mine) * args.clusters
            pull = sum(row[1] for row in mine) / count * 1000
            push = sum(row[2] for row in mine) / count * 1000
            kinds_seen = sorted({(row[3], row[4]) for row in mine})
            print(f"{label:<11} {pull:>17.1f} {push:>17.1f} {push / pull:>10.2f}  {kinds_seen}")


def _kind(unchanged: bool | None, collected: int | None) -> str:
    if unchanged is None:
        return "?"  # a push answered by a portal that does not say
    if unchanged:
        return "unchanged"
    return "full" if collected is None else f"{collected} collected"


if __name__ == "__main__":
    main()
