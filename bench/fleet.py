"""Whole-system benchmark: the portal's own processes keeping a large fleet fresh.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/fleet.py \\
        [--mode pull|forge|agent] [--clusters 500] [--apps 100] [--warmup 3] [--minutes 10] \\
        [--concurrency 2] [--compare [--compare-processes 1,2,4]] [--broker-db 9] [--cache-db 10]

Modes (--mode):
- pull (default): the portal polls every cluster (Cluster connection "api").
- forge: pull, with PORTAL_GITOPS_TOKEN set and the apps spread over --repositories (40)
  repositories on a forge: each Argo CD Application's source (repoURL, path, targetRevision
  `main`) and each Flux Kustomization's GitRepository (url, branch `main`) names its service's
  repository on the test suite's GitHub fake (tests/fakes/forges/github.py, run by
  bench/fleet_forge.py as a process of its own, holding all the repositories), configured as a
  GitHub Enterprise Server is (PORTAL_GITOPS_GITHUB_API=http://127.0.0.1:PORT/api/v3). The fake
  counts every request by repository and kind.
- agent: first the pull run, then the same fleet pushed instead: every cluster registered with
  connection "agent" and an agent token (portal.kernel.catalog.agents.issue, as the Clusters page
  issues them), the portal's web served by gunicorn as docker-compose.yml serves it (with
  --web-workers 2 rather than compose's 4: this machine has 2 cores), and one agent per cluster
  — the portal's own gitops.sources.agent.Agent, the code `manage.py agent` runs — as threads of
  --agent-processes processes (bench/fleet_agents.py), each reading its cluster from nginx
  and pushing a snapshot every --interval seconds. --agent-only skips the pull run.

What runs, as production runs it:
- every cluster's list responses are pre-serialised JSON files served by nginx (Debian's
  nginx-light, installed on first use) on 127.0.0.1; each cluster is a path prefix of that one
  server (`http://127.0.0.1:PORT/c17` is c17's API URL) reached with a token from an
  environment variable. nginx answers from the page cache, so the floor below measures the
  portal's reading, not the server;
- the portal's workers from the tree under test (--tree), split as docker-compose.yml runs
  them (polls with beat in one worker of --concurrency processes; forge, registry and
  notification work in another), on a fresh PostgreSQL database (created beside the one
  DATABASE_URL names) and their own Redis databases (broker and cache), with the environment
  compose gives them (PORTAL_PRODUCTION=1, SECRET_KEY, CACHE_URL);
- while it runs, a third of the Argo CD apps get a new resourceVersion and status.reconciledAt
  every minute (each app every 3 minutes, as Argo CD's reconciliation does) and 1 % of all apps
  change health every 3 minutes; once, a Degraded app is written into one cluster and the
  bench times how long GET /api/v1/gitops takes to show it.

Printed, per run:
- the floor: fetching and JSON-parsing every list the portal reads, once, in one process;
- the age of each cluster's ClusterPoll.last_ok_at (its last good poll, or in agent mode its last
  stored agent report), sampled every 5 s after the warm-up: p50/p95/max;
- sweeps: changes of last_ok_at seen in the measured window, divided by the cluster count;
- the portal's CPU (user + system, from /proc) per sweep and its ratio to the floor: both
  celery workers and beat, plus in agent mode gunicorn's master and workers (shown apart);
  never PostgreSQL, Redis, nginx, the forge fake or the agents (pull mode runs no web server: it
  has no part in collection, and the bench asks GET /api/v1/gitops through Django's test client
  in its own process, in both modes, uncounted). In agent mode the agents' own
  CPU per sweep is printed on a line of its own, and at the end the portal's CPU per sweep of
  both modes side by side;
- queue depth over time (every list in the broker's Redis database), the portal processes'
  peak RSS, and the probe change's time to the API;
- forge mode: tree reads (GET /repos/OWNER/NAME/git/trees/<sha>: one per pin read of a
  repository at a revision) in the measured window, per repository and in total, scaled to
  10 minutes (target: at most 40 for 40 repositories), and every forge request by kind, in
  the measured window and over the whole run;
- with --compare, the same with 1 and 2 worker processes (--compare-processes: any list, e.g.
  1,2,4) on a saturating poll interval, and each one's sweep rate as a multiple of the
  first's, each measured from the end of the warm-up or from when every cluster has been
  stored once, whichever is later (a first poll costs several later ones: with
  one process the first sweep of 500 clusters outlasts a 3-minute warm-up);
- the whole machine's CPU in the window, and PostgreSQL's part of it (its processes', and its
  exited backends' as the postmaster counts them).

Each run's database (bench_fleet_<mode>_<concurrency>) is left until the next run of that name,
so `bench/pages.py --polled bench_fleet_pull_4` can time the pages on 100,000 applications that
real polls stored; with --no-analyze the bench runs no ANALYZE of its own, and the pages are
first timed as a server planned them before autovacuum came round.
"""

from __future__ import annotations

import argparse
import gc
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.fleet import FLEET_SERVICES as SERVICES  # noqa: E402 - after the path
from tests.fakes.fleet import FleetCluster, ForgeFleet, build_fleet, forge_repositories  # noqa: E402

TOKEN_ENV = "BENCH_FLEET_TOKEN"
FORGE_TOKEN_ENV = "BENCH_FORGE_TOKEN"
TOKEN = "bench-fleet-token-" + uuid.uuid4().hex
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


# nginx keeps a served file open this many seconds (open_file_cache_valid) before it looks again:
# a list rewritten within that is still served as it was. A bench that polls right after writing
# waits this out (bench/poll_cost.py); the fleet's minute-apart writes need not.
FILE_CACHE_VALID_SECONDS = 1


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
  open_file_cache_valid {FILE_CACHE_VALID_SECONDS}s;
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
    """Fetch and JSON-parse every list the portal reads, once, in one process.

    With Python's cycle collector off, as the portal decodes (gitops.sources.decoding): in a
    process holding a large heap (this one holds the fleet's objects) the collector would walk
    it every few hundred allocations, and the floor would measure that walk rather than the
    reading (in bench/poll_cost.py it doubled after a full poll's allocations)."""
    http = urllib3.PoolManager(maxsize=4)
    objects = size = 0
    collecting = gc.isenabled()
    gc.disable()
    try:
        started = time.perf_counter()
        for cluster in fleet:
            for path in cluster.lists:
                body = http.request("GET", f"{base}/{cluster.name}{path}?limit=500",
                                    headers={"Authorization": f"Bearer {TOKEN}"}).data
                objects += len(json.loads(body)["items"])
                size += len(body)
        return time.perf_counter() - started, objects, size
    finally:
        if collecting:
            gc.enable()


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


class Autoanalyze(threading.Thread):
    """ANALYZE the portal's database every minute when the server runs without autovacuum.

    Production PostgreSQL keeps its planner statistics with autovacuum; this machine's test
    server has it off, and a database filled from empty is then planned as if its tables held a
    row each (a nested loop over 50,000 apps per pin row: 5 s a query). This does what
    autovacuum's analyze would, no more; its CPU is the server's, not the portal's."""

    def __init__(self, database: str) -> None:
        super().__init__(daemon=True)
        self.database = database
        self.stopped = threading.Event()

    def needed(self) -> bool:
        import psycopg

        with psycopg.connect(self.database, autocommit=True) as conn:
            row = conn.execute("SHOW autovacuum").fetchone()
        return row is not None and row[0] == "off"

    def run(self) -> None:
        import psycopg

        while not self.stopped.wait(60):
            try:
                with psycopg.connect(self.database, autocommit=True) as conn:
                    conn.execute("ANALYZE")
            except psycopg.Error as error:
                print(f"ANALYZE failed: {error}", flush=True)


def seed(tree: Path, env: dict[str, str], fleet: list[FleetCluster], base: str,
         agent_tokens: Path | None = None) -> None:
    """The catalog: environments, services, and the clusters, polled through nginx or, with
    `agent_tokens`, pushed by agents (each with an agent token, issued as an admin would and
    written to that file, 0600, for the agents)."""
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=tree, env=env, check=True)
    script = f"""
import json, os
from portal.kernel.catalog import agents
from portal.kernel.catalog.models import Cluster, Environment, Service
envs = [Environment.objects.create(name=n, order=i, production=n == "prod")
        for i, n in enumerate(["dev", "staging", "prod"])]
Service.objects.bulk_create(Service(name=f"svc{{i:03d}}", image_repository=f"ghcr.io/acme/svc{{i:03d}}")
                            for i in range({SERVICES}))
names = {[c.name for c in fleet]!r}
if {str(agent_tokens) if agent_tokens else ""!r}:
    clusters = Cluster.objects.bulk_create(
        Cluster(name=name, environment=envs[i % 3], connection=Cluster.Connection.AGENT)
        for i, name in enumerate(names))
    tokens = {{cluster.name: agents.issue(cluster, "bench")[1] for cluster in Cluster.objects.all()}}
    fd = os.open({str(agent_tokens)!r}, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(tokens, out)
else:
    Cluster.objects.bulk_create(
        Cluster(name=name, environment=envs[i % 3], connection=Cluster.Connection.API,
                api_url="{base}/" + name, token_env="{TOKEN_ENV}")
        for i, name in enumerate(names))
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


class ForgeFake:
    """bench/fleet_forge.py as a process: the GitHub fake holding the fleet's repositories."""

    def __init__(self, tree: Path, work: Path, repositories: int) -> None:
        self.token = "bench-forge-token-" + uuid.uuid4().hex
        spec = work / "forge.json"
        spec.write_text(json.dumps({"token_env": FORGE_TOKEN_ENV, "repositories": forge_repositories(repositories)}))
        log = open(tree / "var" / "bench-fleet-forge.log", "w")  # noqa: SIM115 - lives with the process
        self.process = subprocess.Popen(
            [sys.executable, str(ROOT / "bench" / "fleet_forge.py"), str(spec)], cwd=tree,
            env=os.environ | {FORGE_TOKEN_ENV: self.token}, stdout=subprocess.PIPE, stderr=log, text=True)
        line = self.process.stdout.readline() if self.process.stdout else ""
        if not line.strip().isdigit():
            raise SystemExit("the forge fake did not start; see var/bench-fleet-forge.log")
        self.web = f"http://127.0.0.1:{int(line)}"
        self.api = self.web + "/api/v3"  # as GitHub Enterprise Server serves its API
        self.http = urllib3.PoolManager(maxsize=1)

    def counts(self) -> dict[str, dict[str, int]]:
        """Requests so far: "owner/name" -> kind ("tree", "branch", "contents", …) -> how many."""
        return json.loads(self.http.request("GET", self.web + "/_bench/counts").data)["repositories"]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def counts_between(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    return {repo: {kind: n - before.get(repo, {}).get(kind, 0) for kind, n in kinds.items()
                   if n - before.get(repo, {}).get(kind, 0)}
            for repo, kinds in after.items()}


def start_web(tree: Path, env: dict[str, str], workers: int) -> tuple[subprocess.Popen, str]:
    """The portal's web as docker-compose.yml serves it (gunicorn portal.wsgi), with `workers` processes."""
    port = free_port()
    log = open(tree / "var" / "bench-fleet-web.log", "w")  # noqa: SIM115 - lives with the process
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "portal.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", str(workers),
         "--access-logfile", "-"], cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    http = urllib3.PoolManager(maxsize=1)
    for _ in range(600):
        if process.poll() is not None:
            raise SystemExit("gunicorn exited; see var/bench-fleet-web.log")
        try:
            http.request("GET", f"http://127.0.0.1:{port}/api/v1/gitops", retries=False, timeout=30.0)
            return process, f"http://127.0.0.1:{port}"
        except urllib3.exceptions.HTTPError:
            time.sleep(0.1)
    raise SystemExit("gunicorn did not answer; see var/bench-fleet-web.log")


def start_agents(tree: Path, env: dict[str, str], work: Path, portal: str, base: str, tokens: dict[str, str],
                 interval: int, processes: int) -> list[subprocess.Popen]:
    """bench/fleet_agents.py in `processes` processes, the clusters dealt round-robin, each
    agent's first read spread over one interval by its place in the whole fleet."""
    names = sorted(tokens)
    agents = []
    for p in range(processes):
        mine = [(n, name) for n, name in enumerate(names) if n % processes == p]
        if not mine:
            continue
        spec = work / f"agents-{p}.json"
        spec.touch(mode=0o600)
        spec.write_text(json.dumps({
            "portal": portal, "interval": interval, "api_token_env": TOKEN_ENV,
            "agents": [{"cluster": name, "token": tokens[name], "api_url": f"{base}/{name}",
                        "offset": interval * n / len(names)} for n, name in mine]}))
        log = open(tree / "var" / f"bench-fleet-agents-{p}.log", "w")  # noqa: SIM115 - lives with the process
        agents.append(subprocess.Popen(
            [sys.executable, str(ROOT / "bench" / "fleet_agents.py"), str(spec)], cwd=tree, env=env,
            stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True))
    return agents


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


def machine_busy_seconds() -> float:
    """CPU seconds every process on this machine has used since boot (/proc/stat, all but idle
    and iowait): beside the portal's own, what PostgreSQL, Redis, nginx and the bench cost."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    ticks = [int(value) for value in fields]
    return (sum(ticks[:8]) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def postgres_busy_seconds() -> float:
    """CPU seconds this machine's PostgreSQL has used: every running postgres process's own, plus
    what its backends that have exited left in the postmaster's children's times."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name, rest = stat.split("(", 1)[1].rsplit(")", 1)
        if name != "postgres":
            continue
        fields = rest.split()
        total += int(fields[11]) + int(fields[12])  # utime + stime
        parent = Path(f"/proc/{fields[1]}/comm")
        if not (parent.exists() and parent.read_text().strip() == "postgres"):  # the postmaster
            total += int(fields[13]) + int(fields[14])  # cutime + cstime
    return total / ticks


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
    mode: str = "pull"  # pull | agent
    ages: list[float] = field(default_factory=list)
    polls: int = 0
    measured_seconds: float = 0.0
    cpu: float = 0.0  # the portal's: celery workers + beat, and in agent mode gunicorn too
    cpu_web: float = 0.0  # of which gunicorn's (master and workers)
    cpu_agents: float = 0.0  # the agents' own processes (not the portal's)
    cpu_background: float = 0.0  # of `cpu`, the forge/registry/notification worker's
    cpu_machine: float = 0.0  # every process on the machine (the portal, PostgreSQL, Redis, nginx, the bench)
    cpu_postgres: float = 0.0  # of `cpu_machine`, PostgreSQL's
    settled_after: float = 0.0  # seconds from start to the measured window
    roles: dict[int, str] = field(default_factory=dict)  # pid -> "poll main", "background pool", "web"
    depth: list[tuple[float, dict[str, int]]] = field(default_factory=list)
    rss: dict[int, float] = field(default_factory=dict)
    change_seconds: float | None = None
    probed: bool = False  # a probe change was written (not in the --compare runs)
    forge_measured: dict[str, dict[str, int]] | None = None  # forge requests in the measured window
    forge_total: dict[str, dict[str, int]] | None = None  # forge requests over the whole run
    pushed: dict[str, int] = field(default_factory=dict)  # agent mode: snapshots stored per agent
    push_answers: dict[str, int] = field(default_factory=dict)  # agent mode: HTTP status -> pushes (whole run)

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




def _stop(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for process in processes:
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def _pids(processes: list[subprocess.Popen]) -> list[int]:
    return [pid for process in processes for pid in process_tree(process.pid)]


def measure(args: argparse.Namespace, tree: Path, fleet: list[FleetCluster], www: Path, base: str,
            concurrency: int, interval: int, minutes: float, warmup: float, probe: bool,
            mode: str = "pull", forge: ForgeFake | None = None, settle: bool = False) -> Run:
    """One run of the portal's processes on `fleet`, measured for `minutes` after `warmup`; with
    `settle`, measured only once every cluster has been stored once, for the same `minutes`."""
    agent = mode == "agent"
    database = fresh_database(f"bench_fleet_{mode}_{concurrency}")
    # The broker's and the cache's Redis databases, flushed at each run (--broker-db, --cache-db:
    # a shared server's other users keep theirs).
    redis_url = f"redis://127.0.0.1:6379/{args.broker_db}"
    cache_url = f"redis://127.0.0.1:6379/{args.cache_db}"
    import redis

    redis.Redis.from_url(redis_url).flushdb()
    redis.Redis.from_url(cache_url).flushdb()
    # Every portal process with the environment docker-compose.yml gives it.
    env = os.environ | {
        "DATABASE_URL": database, "REDIS_URL": redis_url, "CELERY_BROKER_URL": redis_url, "CACHE_URL": cache_url,
        "PORTAL_PRODUCTION": "1", "SECRET_KEY": "bench-fleet-" + uuid.uuid4().hex, "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "0", "SESSION_COOKIE_SECURE": "0",  # plain HTTP on loopback, as compose serves
        "PORTAL_POLL_INTERVAL": str(interval), TOKEN_ENV: TOKEN, "PYTHONPATH": str(tree),
        "DJANGO_SETTINGS_MODULE": "portal.settings",
    }
    for name in ("PORTAL_GITOPS_TOKEN", "PORTAL_GITOPS_GITLAB_TOKEN", "PORTAL_GITOPS_GITEA_TOKEN", "PORTAL_DEMO",
                 "PORTAL_GITOPS_GITHUB_API"):
        env.pop(name, None)
    if args.forge_token:
        env["PORTAL_GITOPS_TOKEN"] = args.forge_token
    if forge is not None:  # configured as a GitHub Enterprise Server is
        env.update({"PORTAL_GITOPS_GITHUB_API": forge.api, "PORTAL_GITOPS_TOKEN": forge.token})
    tokens_file = tree / "var" / "bench-fleet" / "agent-tokens.json"
    seed(tree, env, fleet, base, tokens_file if agent else None)

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

    from portal.kernel.accounts.roles import Role, grant
    from portal.kernel.catalog.models import Cluster

    viewer, _ = get_user_model().objects.get_or_create(username="bench-viewer")
    grant(viewer, Role.VIEWER)
    client = Client()
    client.force_login(viewer)

    run = Run(concurrency=concurrency, mode=mode)
    mutator = Mutator(www, fleet)
    web: list[subprocess.Popen] = []
    agents: list[subprocess.Popen] = []
    analyzer = Autoanalyze(database)
    if args.no_analyze:
        print("--no-analyze: no ANALYZE but what the portal's poll workers ask for (gitops.store.statistics)",
              flush=True)
    elif analyzer.needed():
        print("this PostgreSQL runs without autovacuum: the bench runs ANALYZE every 60 s as its analyze would",
              flush=True)
        analyzer.start()
    workers = start_workers(tree, env, concurrency, args.worker_arg or [])
    try:
        if agent:
            process, portal = start_web(tree, env, args.web_workers)
            web.append(process)
            tokens = json.loads(tokens_file.read_text())
            tokens_file.unlink()
            agents = start_agents(tree, env, tree / "var" / "bench-fleet", portal, base, tokens, interval,
                                  args.agent_processes)
        started = time.monotonic()
        mutator.start()
        seen: dict[str, object] = {}
        cpu_at_start: tuple[float, ...] | None = None
        forge_at_start: dict[str, dict[str, int]] = {}
        measure_from = started + warmup * 60
        probe_at = measure_from + (minutes * 60) / 2
        probe_written = None
        probe_name = ""
        while time.monotonic() < measure_from + minutes * 60:
            run.settled_after = measure_from - started
            now = time.monotonic()
            if any(p.poll() is not None for p in workers + web + agents):
                raise SystemExit("a worker, gunicorn or an agent process exited; see var/bench-fleet-*.log")
            portal_pids, web_pids, agent_pids = _pids(workers + web), _pids(web), _pids(agents)
            rows = list(Cluster.objects.values_list("name", "poll__last_ok_at"))
            if settle and cpu_at_start is None and now >= measure_from and any(ok is None for _, ok in rows):
                # Throughput is compared in the steady state: not while first polls, dearer than
                # any later one, are still being made.
                measure_from = now + 5.0
                probe_at = measure_from + (minutes * 60) / 2
            if now >= measure_from:
                background_pids = _pids(workers[1:])
                cpu_now = (cpu_seconds(portal_pids), cpu_seconds(web_pids), cpu_seconds(agent_pids),
                           cpu_seconds(background_pids), machine_busy_seconds(), postgres_busy_seconds())
                # Each worker's main process (the consumer) apart from its pool's processes.
                run.roles = {pid: "poll pool" for pid in _pids(workers[:1])} | {
                    pid: "background pool" for pid in background_pids}
                run.roles |= {workers[0].pid: "poll main", workers[1].pid: "background main"}
                run.roles |= {pid: "web" for pid in web_pids}
                if cpu_at_start is None:
                    cpu_at_start = cpu_now
                    seen = dict(rows)
                    forge_at_start = forge.counts() if forge else {}
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
                (run.cpu, run.cpu_web, run.cpu_agents, run.cpu_background, run.cpu_machine, run.cpu_postgres) = (
                    a - b for a, b in zip(cpu_now, cpu_at_start, strict=True))
                run.measured_seconds = now - measure_from
                run.rss = peak_rss_mib(portal_pids)
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
                run.probed = True
            if probe_written is not None and run.change_seconds is None and api_shows_degraded(client, probe_name):
                run.change_seconds = time.monotonic() - probe_written
            time.sleep(1.0 if probe_written is not None and run.change_seconds is None else 5.0)
        if forge is not None:
            run.forge_total = forge.counts()
            run.forge_measured = counts_between(forge_at_start, run.forge_total)
    finally:
        mutator.stop.set()
        analyzer.stopped.set()
        _stop(agents)
        for process in agents:
            out = process.stdout.read() if process.stdout else ""
            if out.strip():
                run.pushed.update(json.loads(out.strip().splitlines()[-1]))
        _stop(web + workers)
        if agent:
            run.push_answers = push_answers(tree / "var" / "bench-fleet-web.log")
    return run


def push_answers(access_log: Path) -> dict[str, int]:
    """The status of every snapshot push in gunicorn's access log (its default format)."""
    answers: dict[str, int] = {}
    for line in access_log.read_text(errors="replace").splitlines():
        if '"POST /api/v1/agents/' in line:
            status = line.split('" ', 1)[1].split(" ", 1)[0] if '" ' in line else "?"
            answers[status] = answers.get(status, 0) + 1
    return answers


def _per_10_minutes(n: float, seconds: float) -> float:
    return n * 600 / seconds if seconds else 0.0


def report(run: Run, floor: float, label: str) -> None:
    ages = sorted(a for a in run.ages if a != float("inf"))
    never = sum(1 for a in run.ages if a == float("inf"))
    if run.mode == "agent":
        print(f"\n== {label}: {CLUSTERS} agents push, the portal stores (gunicorn's requests); "
              f"{run.concurrency} poll worker process(es) idle beside beat ==")
        what = "last stored agent report (ClusterPoll.last_ok_at, set when a pushed snapshot is stored)"
    else:
        print(f"\n== {label}: {run.concurrency} poll worker process(es) ==")
        what = "last good poll (ClusterPoll.last_ok_at)"
    if ages:
        p50 = statistics.median(ages)
        p95 = ages[min(len(ages) - 1, int(0.95 * len(ages)))]
        print(f"age of each cluster's {what}, sampled every 5 s after the warm-up: "
              f"p50 {p50:.0f} s, p95 {p95:.0f} s, max {ages[-1]:.0f} s" + (f"; never stored: {never}" if never else ""))
    sweeps = run.sweeps
    unit = "stored reports" if run.mode == "agent" else "polls"
    print(f"{unit} in {run.measured_seconds:.0f} s: {run.polls} = {sweeps:.2f} sweeps of the fleet "
          f"({run.sweep_rate() * 60:.2f} sweeps/min)")
    if sweeps:
        per_sweep = run.cpu / sweeps
        if run.mode == "agent":
            web, rest = run.cpu_web / sweeps, (run.cpu - run.cpu_web) / sweeps
            print(f"portal's CPU (gunicorn master + workers, both celery workers, beat; not PostgreSQL, Redis, nginx "
                  f"or the agents): {run.cpu:.0f} s = {per_sweep:.1f} s per sweep = {per_sweep / floor:.1f}x the floor "
                  f"(web {web:.1f} s, workers and beat {rest:.1f} s per sweep)")
            print(f"agents' own CPU (read their cluster from nginx, gzip and push; not the portal's): "
                  f"{run.cpu_agents:.0f} s = {run.cpu_agents / sweeps:.1f} s per sweep")
        else:
            print(f"portal's CPU (both celery workers, beat included; not PostgreSQL, Redis or nginx): "
                  f"{run.cpu:.0f} s = {per_sweep:.1f} s per sweep = {per_sweep / floor:.1f}x the floor")
            polls = (run.cpu - run.cpu_background) / sweeps
            print(f"  of which the poll worker (beat included) {polls:.1f} s per sweep = {polls / floor:.1f}x the "
                  f"floor, the forge/registry/notification worker {run.cpu_background / sweeps:.1f} s per sweep")
        cores = os.cpu_count() or 1
        print(f"the whole machine's CPU in the window (the portal, PostgreSQL, Redis, nginx, the bench): "
              f"{run.cpu_machine:.0f} s of {run.measured_seconds * cores:.0f} s on {cores} cores; "
              f"of which PostgreSQL {run.cpu_postgres:.0f} s"
              + (f" = {run.cpu_postgres / run.sweeps:.1f} s per sweep" if run.sweeps else ""))
    if run.depth:
        peak = max(sum(d.values()) for _, d in run.depth)
        print(f"queue depth: max {peak} (all queues); over time:")
        step = max(1, len(run.depth) // 12)
        for at, depths in run.depth[::step]:
            shown = ", ".join(f"{q}={n}" for q, n in sorted(depths.items())) or "empty"
            print(f"  t+{at:4.0f} s: {shown}")
    if run.rss:
        by_role: dict[str, list[float]] = {}
        for pid, mib in run.rss.items():
            by_role.setdefault(run.roles.get(pid, "other"), []).append(mib)
        shown = "; ".join(f"{role} {', '.join(f'{v:.0f} MiB' for v in sorted(values, reverse=True))}"
                          for role, values in sorted(by_role.items()))
        print(f"peak RSS per portal process (each worker's main process and its pool's): {shown}")
    if run.change_seconds is not None:
        print(f"a Degraded app written into one cluster appeared in GET /api/v1/gitops after "
              f"{run.change_seconds:.0f} s")
    elif run.probed:
        print("the probe change did not appear in GET /api/v1/gitops before the end")
    if run.pushed:
        stopped = sum(1 for n in run.pushed.values() if n == 0)
        answers = ", ".join(f"{status} x{n}" for status, n in sorted(run.push_answers.items()))
        print(f"agents: {sum(run.pushed.values())} snapshots stored over the whole run (warm-up included) by "
              f"{len(run.pushed)} agents" + (f"; {stopped} stored none" if stopped else "")
              + f"; the portal's answers to their pushes: {answers or 'none logged'}")
    if run.forge_measured is not None:
        report_forge(run)


def report_forge(run: Run) -> None:
    measured = run.forge_measured or {}
    seconds = run.measured_seconds
    repositories = {repo for repo in run.forge_total or {} if repo.startswith("acme/")}
    trees = {repo: measured.get(repo, {}).get("tree", 0) for repo in repositories}
    total = sum(trees.values())
    scaled = "" if abs(seconds - 600) < 30 else \
        f" (scaled from a {seconds / 60:.1f}-minute window: exact only for a 10-minute one)"
    print(f"forge fake: tree reads (GET /repos/…/git/trees/<sha>, one per pin read of a repository at a "
          f"revision) in the measured {seconds:.0f} s: {total}, for {len(trees)} repositories, most on one "
          f"{max(trees.values(), default=0)}; = {_per_10_minutes(total, seconds):.0f} per 10 minutes{scaled} "
          f"(target: at most 40 for 40 repositories)")
    if trees:
        print("  per repository: " + ", ".join(f"{repo.split('/')[1]} {n}" for repo, n in sorted(trees.items())))
    for label, counts in (("measured window", measured), ("whole run, warm-up included", run.forge_total or {})):
        kinds: dict[str, int] = {}
        for per_repo in counts.values():
            for kind, n in per_repo.items():
                kinds[kind] = kinds.get(kind, 0) + n
        shown = ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items())) or "none"
        print(f"  all forge requests, {label}: {sum(kinds.values())} ({shown})")


def main() -> None:
    global CLUSTERS
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__.split("\n", 2)[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=("pull", "forge", "agent"), default="pull",
                        help="pull (default): the portal polls every cluster; forge: the same with a forge token "
                             "and the apps in --repositories repositories on a GitHub fake; agent: pull, then the "
                             "same fleet pushed by agents, with the portal's CPU per sweep of both")
    parser.add_argument("--clusters", type=int, default=500)
    parser.add_argument("--apps", type=int, default=100)
    parser.add_argument("--warmup", type=float, default=3.0, help="minutes before measuring")
    parser.add_argument("--minutes", type=float, default=10.0, help="minutes measured")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--interval", type=int, default=60, help="PORTAL_POLL_INTERVAL (and the agents' interval)")
    parser.add_argument("--compare", action="store_true",
                        help="also run 1 and 2 processes on a saturating interval (5 s) and compare sweep rates")
    parser.add_argument("--compare-minutes", type=float, default=3.0)
    parser.add_argument("--compare-processes", default="1,2",
                        help="with --compare: the poll worker process counts compared, comma-separated (1,2,4)")
    parser.add_argument("--broker-db", type=int, default=9, help="Redis database of the broker (flushed)")
    parser.add_argument("--cache-db", type=int, default=10, help="Redis database of CACHE_URL (flushed)")
    parser.add_argument("--worker-arg", action="append", help="extra argument for `celery worker` (repeatable)")
    parser.add_argument("--forge-token", default="",
                        help="PORTAL_GITOPS_TOKEN for the worker in pull mode (none by default; the apps' "
                             "repositories are then on github.com: use --mode forge to measure forge work)")
    parser.add_argument("--repositories", type=int, default=40, help="forge mode: repositories the apps spread over")
    parser.add_argument("--web-workers", type=int, default=2,
                        help="agent mode: gunicorn workers (docker-compose.yml runs 4; 2 on a 2-core machine)")
    parser.add_argument("--agent-processes", type=int, default=2, help="agent mode: processes the agents run in")
    parser.add_argument("--agent-only", action="store_true", help="agent mode: skip the pull run beside it")
    parser.add_argument("--no-analyze", action="store_true",
                        help="run no ANALYZE where the server has no autovacuum: a first sweep's tables as planned")
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose worker is measured")
    args = parser.parse_args()
    CLUSTERS = args.clusters
    tree = args.tree.resolve()

    work = tree / "var" / "bench-fleet"
    www = work / "www"
    shutil.rmtree(www, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(tree))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    forge = ForgeFake(tree, work, args.repositories) if args.mode == "forge" else None
    place = ForgeFleet(forge.web, args.repositories) if forge else None
    nginx = None
    try:
        t = time.perf_counter()
        fleet = build_fleet(args.clusters, args.apps, place)
        size = sum(write_cluster(www, c) for c in fleet)
        print(f"fleet: {args.clusters} clusters x {args.apps} apps ({sum(c.argo for c in fleet)} Argo CD, "
              f"{sum(not c.argo for c in fleet)} Flux), one Deployment per app; {size / 1e6:.0f} MB of lists "
              f"written in {time.perf_counter() - t:.0f} s", flush=True)
        if forge:
            print(f"forge: a GitHub fake (tests/fakes/forges/github.py, bench/fleet_forge.py) at {forge.api} holding "
                  f"{args.repositories} repositories; every app follows `main` of its service's repository; "
                  f"PORTAL_GITOPS_TOKEN set", flush=True)
        port = free_port()
        nginx = start_nginx(work, www, port)
        base = f"http://127.0.0.1:{port}"
        floor_seconds(fleet, base)  # warm nginx's open-file cache and the page cache
        floor, objects, fetched = floor_seconds(fleet, base)
        print(f"floor (fetch + JSON-parse every list the portal reads, once, one process): {floor:.2f} s "
              f"for {objects:,} objects, {fetched / 1e6:.0f} MB", flush=True)
        runs: dict[str, Run] = {}
        if not (args.mode == "agent" and args.agent_only):
            runs["pull"] = measure(args, tree, fleet, www, base, args.concurrency, args.interval, args.minutes,
                                   args.warmup, probe=True, forge=forge)
            report(runs["pull"], floor, f"{args.mode if args.mode == 'forge' else 'pull'} mode, "
                                        f"PORTAL_POLL_INTERVAL={args.interval}")
        if args.mode == "agent":
            fleet = []  # one fleet in memory at a time
            fleet = build_fleet(args.clusters, args.apps)
            for c in fleet:
                write_cluster(www, c)
            runs["agent"] = measure(args, tree, fleet, www, base, args.concurrency, args.interval, args.minutes,
                                    args.warmup, probe=True, mode="agent")
            report(runs["agent"], floor, f"agent mode, agents and PORTAL_POLL_INTERVAL={args.interval} s, "
                                         f"{args.agent_processes} agent processes, "
                                         f"gunicorn --workers {args.web_workers}")
            print("\nportal's CPU per sweep of the fleet (web + workers + beat; the agents' own CPU apart):")
            for name, run in runs.items():
                if run.sweeps:
                    per_sweep = run.cpu / run.sweeps
                    extra = f"; the agents' own: {run.cpu_agents / run.sweeps:.1f} s" if name == "agent" else ""
                    print(f"  {name:5}: {per_sweep:.1f} s = {per_sweep / floor:.1f}x the floor{extra}")
                else:
                    print(f"  {name:5}: no sweep measured")
        if args.compare:
            rates = {}
            processes = [int(n) for n in args.compare_processes.split(",")]
            for concurrency in processes:
                fleet = []  # one fleet in memory at a time (1.8 GB at 1,000 clusters x 100 apps)
                fleet = build_fleet(args.clusters, args.apps, place)
                for c in fleet:
                    write_cluster(www, c)
                compared = measure(args, tree, fleet, www, base, concurrency, 5, args.compare_minutes, args.warmup,
                                   probe=False, forge=forge, settle=True)
                report(compared, floor, f"saturated (PORTAL_POLL_INTERVAL=5), measured from t+"
                                        f"{compared.settled_after:.0f} s: the warm-up, and every cluster stored once")
                rates[concurrency] = compared.sweep_rate()
            first = processes[0]
            if rates[first]:
                print("\nsweep rate against " + f"{first} process(es): " + ", ".join(
                    f"{n} processes {rates[n] / rates[first]:.2f}x" for n in processes[1:]))
    finally:
        if nginx is not None:
            nginx.terminate()
            nginx.wait(timeout=10)
        if forge is not None:
            forge.stop()


if __name__ == "__main__":
    main()
