"""Whole-system benchmark: the portal's own Celery worker and beat keeping a large fleet fresh.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/fleet.py \\
        [--clusters 500] [--apps 100] [--warmup 3] [--minutes 10] [--concurrency 2] [--compare]

What runs, as production runs it:
- every cluster's list responses are pre-serialised JSON files served by nginx (Debian's
  nginx-light, installed on first use) on 127.0.0.1; each cluster is a path prefix of that one
  server (`http://127.0.0.1:PORT/c17` is c17's API URL) reached with a token from an
  environment variable. nginx answers from the page cache, so the floor below measures the
  portal's reading, not the server;
- the portal's workers from the tree under test (--tree), split as docker-compose.yml runs
  them (polls with beat in one worker of --concurrency processes; forge, registry and
  notification work in another), on a fresh PostgreSQL database (created beside the one
  DATABASE_URL names) and their own Redis database;
- while it runs, a third of the Argo CD apps get a new resourceVersion and status.reconciledAt
  every minute (each app every 3 minutes, as Argo CD's reconciliation does) and 1 % of all apps
  change health every 3 minutes; once, a Degraded app is written into one cluster and the
  bench times how long GET /api/v1/gitops takes to show it.

Printed: the floor (fetching and JSON-parsing every list the portal reads, once, in one
process), CPU seconds per sweep of the fleet and their ratio to the floor, p50/p95/max age of
each cluster's last good poll after the warm-up, queue depth over time, the change's time to
the API, the workers' peak RSS; with --compare, the same with 1 and 2 worker processes on a
saturating poll interval, and the ratio of their sweep rates.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import urllib3
from collect import application, deployment  # the Application and Deployment shapes of bench/collect.py

ROOT = Path(__file__).resolve().parents[1]
SERVICES = 200
TOKEN_ENV = "BENCH_FLEET_TOKEN"
TOKEN = "bench-fleet-token-" + uuid.uuid4().hex
REDIS_DB = 9
EMPTY = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": "1"}, "items": []}


# --- the fleet as files ---------------------------------------------------------------------


def _project(name: str) -> dict:
    return {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
        "metadata": {"name": name, "namespace": "argocd", "uid": str(uuid.uuid4()), "resourceVersion": "1"},
        "spec": {"sourceRepos": ["*"], "destinations": [{"server": "*", "namespace": "*"}],
                 "syncWindows": [{"kind": "deny", "schedule": "0 22 * * *", "duration": "8h",
                                  "applications": ["*"], "manualSync": True}]},
    }


def _kustomization(i: int, cluster: str) -> dict:
    service = f"svc{i % SERVICES:03d}"
    name = f"{service}-{i:04d}"
    sha = uuid.uuid5(uuid.NAMESPACE_URL, f"{cluster}/{name}").hex[:40]
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
        "metadata": {"name": name, "namespace": "flux-system", "uid": str(uuid.uuid4()), "resourceVersion": "1",
                     "generation": 2},
        "spec": {"interval": "10m", "path": f"./apps/{service}/prod", "prune": True,
                 "sourceRef": {"kind": "GitRepository", "name": "fleet"}},
        "status": {"observedGeneration": 2, "lastAppliedRevision": f"main@sha1:{sha}",
                   "lastAttemptedRevision": f"main@sha1:{sha}",
                   "conditions": [{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded",
                                   "message": f"Applied revision: main@sha1:{sha}",
                                   "lastTransitionTime": "2026-11-29T08:00:00Z"}],
                   "inventory": {"entries": [{"id": f"{name}_{service}_apps_Deployment", "v": "v1"}]}},
    }


def _git_repository() -> dict:
    return {
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
        "metadata": {"name": "fleet", "namespace": "flux-system", "uid": str(uuid.uuid4()), "resourceVersion": "1"},
        "spec": {"url": "https://github.com/acme/fleet", "ref": {"branch": "main"}, "interval": "1m"},
        "status": {"artifact": {"revision": "main@sha1:" + "a" * 40},
                   "conditions": [{"type": "Ready", "status": "True", "reason": "Succeeded",
                                   "lastTransitionTime": "2026-11-29T08:00:00Z"}]},
    }


@dataclass
class FleetCluster:
    name: str
    argo: bool
    lists: dict[str, dict] = field(default_factory=dict)  # list path -> list object
    version: int = 1

    def apps(self) -> list[dict]:
        path = "/apis/argoproj.io/v1alpha1/applications" if self.argo else \
            "/apis/kustomize.toolkit.fluxcd.io/v1/kustomizations"
        return self.lists[path]["items"]


def build_fleet(clusters: int, apps: int) -> list[FleetCluster]:
    from gitops import kinds

    fleet = []
    argo_clusters = clusters * 4 // 5
    for n in range(clusters):
        cluster = FleetCluster(name=f"c{n:03d}", argo=n < argo_clusters)
        for spec in kinds.KINDS:
            cluster.lists[spec.list_path(spec.versions[0])] = copy.deepcopy(EMPTY)
        first = n * apps
        if cluster.argo:
            items = [application(first + i, cluster.name) for i in range(apps)]
            for item in items:  # bench/collect.py's shapes, with this fleet's service count
                service = item["metadata"]["labels"]["app.kubernetes.io/part-of"]
                item["metadata"]["resourceVersion"] = "1"
                item["status"]["summary"]["images"] = [i.replace(service, f"svc{int(service[3:]) % SERVICES:03d}")
                                                       for i in item["status"]["summary"]["images"]]
            cluster.lists["/apis/argoproj.io/v1alpha1/applications"]["items"] = items
            cluster.lists["/apis/argoproj.io/v1alpha1/appprojects"]["items"] = [
                _project(f"project-{p}") for p in range(6)]
        else:
            cluster.lists["/apis/kustomize.toolkit.fluxcd.io/v1/kustomizations"]["items"] = [
                _kustomization(first + i, cluster.name) for i in range(apps)]
            cluster.lists["/apis/source.toolkit.fluxcd.io/v1/gitrepositories"]["items"] = [_git_repository()]
        workloads = [deployment(first + i) for i in range(apps)]
        for w in workloads:
            w["metadata"]["resourceVersion"] = "1"
        cluster.lists["/apis/apps/v1/deployments"]["items"] = workloads
        fleet.append(cluster)
    return fleet


def write_cluster(www: Path, cluster: FleetCluster) -> int:
    """Every list of one cluster as a file; replaced atomically (nginx never serves half a file)."""
    written = 0
    for path, body in cluster.lists.items():
        target = www / cluster.name / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        data = json.dumps(body, separators=(",", ":")).encode()
        tmp = target.with_suffix(".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, target)
        written += len(data)
    return written


# --- nginx ------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(prefix: Path, www: Path, port: int) -> subprocess.Popen:
    if not shutil.which("nginx") and not Path("/usr/sbin/nginx").exists():
        print("installing Debian's nginx-light (the fleet's API server)", flush=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "nginx-light"], check=True,
                       env=os.environ | {"DEBIAN_FRONTEND": "noninteractive"}, stdout=subprocess.DEVNULL)
    (prefix / "logs").mkdir(parents=True, exist_ok=True)
    conf = prefix / "nginx.conf"
    conf.write_text(f"""
user root;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 100000;
  default_type application/json;
  open_file_cache max=20000 inactive=20s;
  open_file_cache_valid 1s;
  server {{
    listen 127.0.0.1:{port};
    root {www};
    location / {{ try_files $uri =404; }}
  }}
}}
""")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    process = subprocess.Popen([nginx, "-c", str(conf), "-p", str(prefix), "-g", "daemon off;"])
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process
        except OSError:
            time.sleep(0.05)
    raise SystemExit("nginx did not start; see " + str(prefix / "logs/error.log"))


def floor_seconds(fleet: list[FleetCluster], base: str) -> tuple[float, int, int]:
    """Fetch and JSON-parse every list the portal reads, once, in one process."""
    http = urllib3.PoolManager(maxsize=4)
    objects = size = 0
    started = time.perf_counter()
    for cluster in fleet:
        for path in cluster.lists:
            body = http.request("GET", f"{base}/{cluster.name}{path}?limit=500",
                                headers={"Authorization": f"Bearer {TOKEN}"}).data
            objects += len(json.loads(body)["items"])
            size += len(body)
    return time.perf_counter() - started, objects, size


# --- the database and the worker --------------------------------------------------------------


def fresh_database(name: str) -> str:
    import psycopg

    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith("postgres"):
        raise SystemExit("bench/fleet.py runs on PostgreSQL: set DATABASE_URL=postgres://…")
    admin = base.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return base.rsplit("/", 1)[0] + "/" + name


def seed(tree: Path, env: dict[str, str], fleet: list[FleetCluster], base: str) -> None:
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=tree, env=env, check=True)
    script = f"""
from portal.catalog.models import Cluster, Environment, Service
envs = [Environment.objects.create(name=n, order=i, production=n == "prod")
        for i, n in enumerate(["dev", "staging", "prod"])]
Service.objects.bulk_create(Service(name=f"svc{{i:03d}}", image_repository=f"ghcr.io/acme/svc{{i:03d}}")
                            for i in range({SERVICES}))
Cluster.objects.bulk_create(
    Cluster(name=name, environment=envs[i % 3], connection=Cluster.Connection.API,
            api_url="{base}/" + name, token_env="{TOKEN_ENV}")
    for i, name in enumerate({[c.name for c in fleet]!r}))
"""
    subprocess.run([sys.executable, "manage.py", "shell", "-v", "0", "-c", script], cwd=tree, env=env, check=True)


def start_workers(tree: Path, env: dict[str, str], concurrency: int, extra: list[str]) -> list[subprocess.Popen]:
    """The workers as docker-compose.yml runs them: polls (with beat here) in one worker of
    `concurrency` processes, forge/registry/notification work in another of one process."""
    celery = [sys.executable, "-m", "celery", "-A", "portal", "worker", "--loglevel", "WARNING",
              "--without-gossip", "--without-mingle"]
    commands = {
        "poll": [*celery, "--beat", "--queues", "poll", "--concurrency", str(concurrency),
                 "--hostname", "poll@%h", *extra],
        "background": [*celery, "--queues", "notify,registry,forge", "--concurrency", "1",
                       "--hostname", "background@%h"],
    }
    workers = []
    for name, command in commands.items():
        log = open(tree / "var" / f"bench-fleet-{name}-{concurrency}.log", "w")  # noqa: SIM115 - lives with it
        workers.append(subprocess.Popen(command, cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True))
    return workers


def process_tree(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def cpu_seconds(pids: list[int]) -> float:
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks  # utime + stime
    return total


def peak_rss_mib(pids: list[int]) -> dict[int, float]:
    peaks = {}
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peaks[pid] = int(line.split()[1]) / 1024
        except OSError:
            continue
    return peaks


def queue_depths(redis_url: str) -> dict[str, int]:
    import redis

    client = redis.Redis.from_url(redis_url)
    depths: dict[str, int] = {}
    for key in client.scan_iter(count=1000):
        if client.type(key) == b"list":
            name = key.decode(errors="replace").split("\x06")[0]
            depths[name] = depths.get(name, 0) + client.llen(key)
    return depths


# --- one run ----------------------------------------------------------------------------------


@dataclass
class Run:
    concurrency: int
    ages: list[float] = field(default_factory=list)
    polls: int = 0
    measured_seconds: float = 0.0
    cpu: float = 0.0
    depth: list[tuple[float, dict[str, int]]] = field(default_factory=list)
    rss: dict[int, float] = field(default_factory=dict)
    change_seconds: float | None = None

    @property
    def sweeps(self) -> float:
        return self.polls / max(1, CLUSTERS)

    def sweep_rate(self) -> float:
        return self.sweeps / self.measured_seconds if self.measured_seconds else 0.0


CLUSTERS = 0


class Mutator(threading.Thread):
    """Argo CD's reconciliation (reconciledAt + resourceVersion, each app every 3 minutes)
    and 1 % of apps changing health every 3 minutes, written into the served files."""

    def __init__(self, www: Path, fleet: list[FleetCluster], period: float = 60.0) -> None:
        super().__init__(daemon=True)
        self.www, self.fleet, self.period = www, fleet, period
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.rng = random.Random(7)  # noqa: S311 - a benchmark's spread, not a secret

    def run(self) -> None:
        tick = 0
        while not self.stop.wait(self.period):
            tick += 1
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            with self.lock:
                for n, cluster in enumerate(self.fleet):
                    touched = False
                    if cluster.argo and n % 3 == tick % 3:
                        for app in cluster.apps():
                            cluster.version += 1
                            app["metadata"]["resourceVersion"] = str(cluster.version)
                            app["status"]["reconciledAt"] = stamp
                        touched = True
                    for app in cluster.apps():
                        if self.rng.random() < 0.01 / 3:  # 1 % per 3 minutes
                            _flip_health(app, cluster)
                            touched = True
                    if touched:
                        write_cluster(self.www, cluster)


def _flip_health(app: dict, cluster: FleetCluster) -> None:
    cluster.version += 1
    app["metadata"]["resourceVersion"] = str(cluster.version)
    if cluster.argo:
        health = app["status"]["health"]
        health["status"] = "Degraded" if health["status"] == "Healthy" else "Healthy"
        health["lastTransitionTime"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    else:
        ready = app["status"]["conditions"][0]
        ready["status"] = "False" if ready["status"] == "True" else "True"
        ready["reason"] = "HealthCheckFailed" if ready["status"] == "False" else "ReconciliationSucceeded"
        ready["lastTransitionTime"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def api_shows_degraded(client, name: str) -> bool:
    answer = client.get("/api/v1/gitops", {"q": name})
    if answer.status_code != 200:
        return False
    return any(item.get("name") == name and item.get("health_status") == "Degraded"
               for item in answer.json().get("results", []))


def measure(args: argparse.Namespace, tree: Path, fleet: list[FleetCluster], www: Path, base: str,
            concurrency: int, interval: int, minutes: float, warmup: float, probe: bool) -> Run:
    database = fresh_database(f"bench_fleet_{concurrency}")
    redis_url = f"redis://127.0.0.1:6379/{REDIS_DB}"
    import redis

    redis.Redis.from_url(redis_url).flushdb()
    env = os.environ | {
        "DATABASE_URL": database, "REDIS_URL": redis_url, "CELERY_BROKER_URL": redis_url,
        "PORTAL_POLL_INTERVAL": str(interval), TOKEN_ENV: TOKEN, "PYTHONPATH": str(tree),
        "DJANGO_SETTINGS_MODULE": "portal.settings",
    }
    for name in ("PORTAL_GITOPS_TOKEN", "PORTAL_GITOPS_GITLAB_TOKEN", "PORTAL_GITOPS_GITEA_TOKEN", "PORTAL_DEMO"):
        env.pop(name, None)
    if args.forge_token:
        env["PORTAL_GITOPS_TOKEN"] = args.forge_token
    seed(tree, env, fleet, base)

    # This process reads the same database (ages, the API) through Django.
    os.environ.update({"DATABASE_URL": database, "REDIS_URL": redis_url})
    import django

    if not getattr(measure, "_django", False):
        sys.path.insert(0, str(tree))
        django.setup()
        measure._django = True  # type: ignore[attr-defined]
    from django.db import connections

    connections.close_all()
    from django.conf import settings

    settings.DATABASES["default"]["NAME"] = database.rsplit("/", 1)[1]
    connections.close_all()
    from django.contrib.auth import get_user_model
    from django.test import Client

    from portal.accounts.roles import Role, grant
    from portal.catalog.models import Cluster

    viewer, _ = get_user_model().objects.get_or_create(username="bench-viewer")
    grant(viewer, Role.VIEWER)
    client = Client()
    client.force_login(viewer)

    run = Run(concurrency=concurrency)
    mutator = Mutator(www, fleet)
    workers = start_workers(tree, env, concurrency, args.worker_arg or [])
    started = time.monotonic()
    mutator.start()
    seen: dict[str, object] = {}
    cpu_at_start = None
    measure_from = started + warmup * 60
    probe_at = measure_from + (minutes * 60) / 2
    probe_written = None
    probe_name = ""
    try:
        while time.monotonic() < measure_from + minutes * 60:
            now = time.monotonic()
            pids = [pid for worker in workers for pid in process_tree(worker.pid)]
            if any(worker.poll() is not None for worker in workers):
                raise SystemExit("a worker exited; see var/bench-fleet-*.log")
            rows = list(Cluster.objects.values_list("name", "last_ok_at"))
            if now >= measure_from:
                if cpu_at_start is None:
                    cpu_at_start = cpu_seconds(pids)
                    seen = dict(rows)
                else:
                    for name, last_ok in rows:
                        if last_ok is not None and seen.get(name) != last_ok:
                            run.polls += 1
                            seen[name] = last_ok
                from django.utils import timezone

                wall = timezone.now()
                run.ages.extend((wall - last_ok).total_seconds() if last_ok else float("inf")
                                for _, last_ok in rows)
                run.depth.append((now - started, queue_depths(redis_url)))
                run.cpu = cpu_seconds(pids) - cpu_at_start
                run.measured_seconds = now - measure_from
                run.rss = peak_rss_mib(pids)
            if probe and probe_written is None and now >= probe_at:
                with mutator.lock:
                    target = fleet[17 % len(fleet)]
                    app = target.apps()[0]
                    probe_name = app["metadata"]["name"]
                    _flip_health(app, target)
                    if target.argo:
                        app["status"]["health"]["status"] = "Degraded"
                    write_cluster(www, target)
                probe_written = time.monotonic()
            if probe_written is not None and run.change_seconds is None and api_shows_degraded(client, probe_name):
                run.change_seconds = time.monotonic() - probe_written
            time.sleep(1.0 if probe_written is not None and run.change_seconds is None else 5.0)
    finally:
        mutator.stop.set()
        for worker in workers:
            os.killpg(worker.pid, signal.SIGTERM)
        for worker in workers:
            try:
                worker.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
    return run


def report(run: Run, floor: float, label: str) -> None:
    ages = sorted(a for a in run.ages if a != float("inf"))
    never = sum(1 for a in run.ages if a == float("inf"))
    print(f"\n== {label}: {run.concurrency} poll worker process(es) ==")
    if ages:
        p50 = statistics.median(ages)
        p95 = ages[min(len(ages) - 1, int(0.95 * len(ages)))]
        print(f"age of each cluster's last good poll (sampled every 5 s after the warm-up): "
              f"p50 {p50:.0f} s, p95 {p95:.0f} s, max {ages[-1]:.0f} s" + (f"; never polled: {never}" if never else ""))
    sweeps = run.sweeps
    print(f"polls in {run.measured_seconds:.0f} s: {run.polls} = {sweeps:.2f} sweeps "
          f"({run.sweep_rate() * 60:.2f} sweeps/min)")
    if sweeps:
        per_sweep = run.cpu / sweeps
        print(f"workers' CPU (both workers, beat included): {run.cpu:.0f} s = {per_sweep:.1f} s per sweep = "
              f"{per_sweep / floor:.1f}x the floor")
    if run.depth:
        peak = max(sum(d.values()) for _, d in run.depth)
        print(f"queue depth: max {peak} (all queues); over time:")
        step = max(1, len(run.depth) // 12)
        for at, depths in run.depth[::step]:
            shown = ", ".join(f"{q}={n}" for q, n in sorted(depths.items())) or "empty"
            print(f"  t+{at:4.0f} s: {shown}")
    if run.rss:
        print(f"peak RSS per process: {', '.join(f'{v:.0f} MiB' for v in sorted(run.rss.values(), reverse=True))}")
    if run.change_seconds is not None:
        print(f"a Degraded app written into one cluster appeared in GET /api/v1/gitops after "
              f"{run.change_seconds:.0f} s")
    elif run.measured_seconds:
        print("the probe change did not appear in GET /api/v1/gitops before the end")


def main() -> None:
    global CLUSTERS
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clusters", type=int, default=500)
    parser.add_argument("--apps", type=int, default=100)
    parser.add_argument("--warmup", type=float, default=3.0, help="minutes before measuring")
    parser.add_argument("--minutes", type=float, default=10.0, help="minutes measured")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--interval", type=int, default=60, help="PORTAL_POLL_INTERVAL")
    parser.add_argument("--compare", action="store_true",
                        help="also run 1 and 2 processes on a saturating interval (5 s) and compare sweep rates")
    parser.add_argument("--compare-minutes", type=float, default=3.0)
    parser.add_argument("--worker-arg", action="append", help="extra argument for `celery worker` (repeatable)")
    parser.add_argument("--forge-token", default="", help="PORTAL_GITOPS_TOKEN for the worker (none by default)")
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose worker is measured")
    args = parser.parse_args()
    CLUSTERS = args.clusters
    tree = args.tree.resolve()

    work = tree / "var" / "bench-fleet"
    www = work / "www"
    shutil.rmtree(www, ignore_errors=True)
    sys.path.insert(0, str(tree))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    t = time.perf_counter()
    fleet = build_fleet(args.clusters, args.apps)
    size = sum(write_cluster(www, c) for c in fleet)
    print(f"fleet: {args.clusters} clusters x {args.apps} apps ({sum(c.argo for c in fleet)} Argo CD, "
          f"{sum(not c.argo for c in fleet)} Flux), one Deployment per app; {size / 1e6:.0f} MB of lists "
          f"written in {time.perf_counter() - t:.0f} s", flush=True)
    port = free_port()
    nginx = start_nginx(work, www, port)
    base = f"http://127.0.0.1:{port}"
    try:
        floor_seconds(fleet, base)  # warm nginx's open-file cache and the page cache
        floor, objects, fetched = floor_seconds(fleet, base)
        print(f"floor (fetch + JSON-parse every list the portal reads, once, one process): {floor:.2f} s "
              f"for {objects:,} objects, {fetched / 1e6:.0f} MB", flush=True)
        run = measure(args, tree, fleet, www, base, args.concurrency, args.interval, args.minutes, args.warmup,
                      probe=True)
        report(run, floor, f"PORTAL_POLL_INTERVAL={args.interval}")
        if args.compare:
            rates = {}
            for concurrency in (1, 2):
                fleet = build_fleet(args.clusters, args.apps)
                for c in fleet:
                    write_cluster(www, c)
                compared = measure(args, tree, fleet, www, base, concurrency, 5, args.compare_minutes, 1.0,
                                   probe=False)
                report(compared, floor, "saturated (PORTAL_POLL_INTERVAL=5)")
                rates[concurrency] = compared.sweep_rate()
            if rates[1]:
                print(f"\n2 processes sweep {rates[2] / rates[1]:.2f}x as fast as 1")
    finally:
        nginx.terminate()
        nginx.wait(timeout=10)


if __name__ == "__main__":
    main()
