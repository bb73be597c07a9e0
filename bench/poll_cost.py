"""CPU of one poll of a 100-app cluster, by kind of poll, against the floor, in one process.

bench/fleet.py measures the whole system for minutes; this measures what one poll costs the
worker, poll kind by poll kind, in seconds, so that a change to the poll path can be weighed
(and profiled) before the long run. The lists are bench/fleet.py's, pre-serialised and served
by nginx as there; the catalog holds --catalog clusters (a fleet's size: what a poll reads of
the catalog grows with it), --polled of them actually polled.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/poll_cost.py \\
        [--catalog 1000] [--polled 8] [--apps 100] [--rounds 3] [--profile KIND] [--profile-out FILE]

Poll kinds, in the order a steady fleet meets them (each measured over every polled cluster):
- first: the first poll (every row inserted);
- unchanged: nothing moved since (a Flux cluster's usual poll);
- restamp: a third of the Argo CD apps re-stamped by Argo CD's reconciliation (resourceVersion
  and status.reconciledAt only: an Argo CD cluster's usual poll);
- flip: one app's health changed (collected and stored alone);
- full: the periodic full poll (every 5-10 minutes; gitops.derive.unchanged), nothing changed
  but the stamps.
Printed: each kind's CPU per poll and its ratio to the floor's CPU per cluster (fetching and
JSON-parsing the same lists), the floor measured right before each kind (the CPU a second buys
varies on a shared machine), medians over --rounds rounds, and the database rows
a poll reads (a count the machine's load does not move); with --profile KIND, that kind's cProfile (top
functions by cumulative time), written to --profile-out as well. It measures the checkout it
sits in (and says which): for a before/after, copy it into the older checkout's bench/ and run
both at once.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

KINDS = ("first", "unchanged", "restamp", "flip", "full")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__.split("\n", 2)[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--catalog", type=int, default=1000, help="clusters in the catalog")
    parser.add_argument("--polled", type=int, default=8, help="of them polled (4 in 5 Argo CD, as bench/fleet.py)")
    parser.add_argument("--apps", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of the later kinds (unchanged to full); the median of each is printed")
    parser.add_argument("--profile", choices=KINDS, help="profile this kind of poll")
    parser.add_argument("--profile-out", type=Path, help="where to write the profile (pstats)")
    args = parser.parse_args()
    from harness import bench_database

    with bench_database():
        run(args)


def run(args: argparse.Namespace) -> None:
    import fleet as fleetbench

    from gitops import polling
    from gitops.clusterpoll import ClusterObjectVersions
    from portal.kernel.catalog.models import Cluster, Environment, Service
    from tests.fakes.fleet import FLEET_SERVICES, build_fleet

    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-poll-cost-{os.getpid()}"
    www = work / "www"
    www.mkdir(parents=True)
    fleet = build_fleet(args.polled, args.apps)
    for cluster in fleet:
        fleetbench.write_cluster(www, cluster)
    port = fleetbench.free_port()
    nginx = fleetbench.start_nginx(work, www, port)
    base = f"http://127.0.0.1:{port}"
    os.environ[fleetbench.TOKEN_ENV] = fleetbench.TOKEN
    try:
        envs = [Environment.objects.create(name=n, order=i, production=n == "prod")
                for i, n in enumerate(["dev", "staging", "prod"])]
        Service.objects.bulk_create(Service(name=f"svc{i:03d}", image_repository=f"ghcr.io/acme/svc{i:03d}")
                                    for i in range(FLEET_SERVICES))
        Cluster.objects.bulk_create(
            Cluster(name=f"c{n:04d}", environment=envs[n % 3], connection=Cluster.Connection.API,
                    api_url=f"{base}/c{n:04d}", token_env=fleetbench.TOKEN_ENV)
            for n in range(args.polled, args.catalog))
        polled = Cluster.objects.bulk_create(
            Cluster(name=c.name, environment=envs[n % 3], connection=Cluster.Connection.API,
                    api_url=f"{base}/{c.name}", token_env=fleetbench.TOKEN_ENV)
            for n, c in enumerate(fleet))
        polled = list(Cluster.objects.filter(pk__in=[c.pk for c in polled]).order_by("name"))

        fleetbench.floor_seconds(fleet, base)  # nginx's caches warm
        _, objects, size = fleetbench.floor_seconds(fleet, base)
        print(f"catalog {args.catalog} clusters, {len(fleet)} polled x {args.apps} apps "
              f"({sum(c.argo for c in fleet)} Argo CD), {objects // len(fleet)} objects and "
              f"{size / len(fleet) / 1e6:.2f} MB of lists a cluster; polling from {polling.__file__}")
        measured: dict[str, list[tuple[float, float]]] = {kind: [] for kind in KINDS}
        rows_read: dict[str, list[int]] = {kind: [] for kind in KINDS}
        rows = count_rows_fetched()

        def floor_cpu() -> float:
            """The floor's CPU per cluster, measured now: on a shared machine the CPU a second buys
            varies from minute to minute, so each kind is weighed against a floor of its moment."""
            cpu = time.process_time()
            fleetbench.floor_seconds(fleet, base)
            return (time.process_time() - cpu) / len(fleet)

        def poll_all(kind: str) -> float:
            floor = floor_cpu()
            before = rows[0]
            profiler = cProfile.Profile() if kind == args.profile else None
            cpu = time.process_time()
            if profiler:
                profiler.enable()
            for cluster in polled:
                report = polling.poll(cluster)
                assert report.ok, report.error
            if profiler:
                profiler.disable()
            per_poll = (time.process_time() - cpu) / len(polled)
            measured[kind].append((per_poll, floor))
            rows_read[kind].append((rows[0] - before) // len(polled))
            if profiler:
                stats = pstats.Stats(profiler)
                if args.profile_out:
                    stats.dump_stats(str(args.profile_out))
                stats.sort_stats("cumulative").print_stats(40)
            return per_poll

        def served() -> None:
            """Wait until nginx serves the lists just written, not its open copy of the old ones
            (a poll right after a write would otherwise measure an unchanged poll)."""
            time.sleep(fleetbench.FILE_CACHE_VALID_SECONDS + 0.2)

        def restamp(share: int) -> None:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            for cluster in fleet:
                if cluster.argo:
                    for n, app in enumerate(cluster.apps()):
                        if n % 3 == share:
                            cluster.version += 1
                            app["metadata"]["resourceVersion"] = str(cluster.version)
                            app["status"]["reconciledAt"] = stamp
                fleetbench.write_cluster(www, cluster)

        from django.utils import timezone

        poll_all("first")
        for round_ in range(args.rounds):
            poll_all("unchanged")
            restamp(round_ % 3)
            served()
            poll_all("restamp")
            for cluster in fleet:
                fleetbench._flip_health(cluster.apps()[5 + round_], cluster)
                fleetbench.write_cluster(www, cluster)
            served()
            poll_all("flip")
            restamp((round_ + 1) % 3)
            # The last full poll's trust lapsed, as it does every 5-10 minutes.
            ClusterObjectVersions.objects.filter(cluster__in=polled).update(
                full_poll_trusted_until=timezone.now() - timedelta(hours=1))
            served()
            poll_all("full")
        for kind, samples in measured.items():
            per_poll = statistics.median(cpu for cpu, _ in samples)
            ratio = statistics.median(cpu / floor for cpu, floor in samples)
            floors = statistics.median(floor for _, floor in samples)
            print(f"{kind:<10} {per_poll * 1000:7.1f} ms CPU a poll (median of {len(samples)}) = {ratio:5.2f}x "
                  f"the floor of its moment (median floor {floors * 1000:.1f} ms); "
                  f"{statistics.median(rows_read[kind]):.0f} database rows read a poll", flush=True)
    finally:
        nginx.terminate()
        nginx.wait(timeout=10)


def count_rows_fetched() -> list[int]:
    """A counter of the rows every psycopg cursor of this process hands out, from now on: a
    figure the machine's load does not move, unlike CPU seconds."""
    import psycopg

    counter = [0]
    for name in ("fetchone", "fetchmany", "fetchall"):
        method = getattr(psycopg.Cursor, name)

        def counted(self, *args, _method=method, **kwargs):
            got = _method(self, *args, **kwargs)
            counter[0] += (1 if got is not None else 0) if _method.__name__ == "fetchone" else len(got)
            return got

        setattr(psycopg.Cursor, name, counted)
    return counter


if __name__ == "__main__":
    main()
