"""Load benchmark: many people at once on the portal as production serves it (gunicorn on
PostgreSQL), throughput and p50/p95 per page for 1, 10 and 30 concurrent users.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python bench/load.py \
        [--apps 1200] [--seconds 15] [--users 1,10,30] [--workers 4] [--threads 1]

Each user is a signed-in session of its own that asks for the pages one after the other with no
pause (a closed loop: the harshest reading of "30 people at once"), each user starting at a
different page. The client is a small asyncio HTTP/1.1 client written here, not a load tool from
the registries: it costs next to nothing per request (no parsing beyond the status line), and the
floor below proves it. The fleet is seeded in bulk (tests.fixtures.seed), then ANALYZEd as
production's autovacuum would have done (this machine's PostgreSQL runs without autovacuum).

The floor: the same client, the same users and the same bytes, from a server that only writes
pre-serialised responses of each page's size. Its throughput is what this machine gives a
client and a server that do nothing; the portal's figures are read against it in the same run,
since this machine's speed drifts.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from harness import ROOT, bench_database, percentile

PAGES = {
    "/": "/",
    "/gitops": "/gitops",
    "/matrix": "/matrix",
    "/delivery": "/delivery",
    "/services/svc000": "/services/svc000",
    "/api/v1/gitops": "/api/v1/gitops",
}
GUNICORN = Path(sys.executable).with_name("gunicorn")
BUDGET_P95_MS = 300


async def _get(port: int, path: str, cookie: str) -> tuple[int, int]:
    """One request on a connection of its own (gunicorn's sync workers close each one): the
    status and the number of bytes read."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: {cookie}\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    data = await reader.read()
    writer.close()
    status = int(data[9:12]) if data[:5] == b"HTTP/" else 0
    return status, len(data)


async def _user(port: int, cookie: str, start: int, until: float, samples: dict[str, list[float]],
                errors: list[str]) -> None:
    labels = list(PAGES)
    turn = start
    while time.monotonic() < until:
        label = labels[turn % len(labels)]
        turn += 1
        began = time.perf_counter()
        status, _ = await _get(port, PAGES[label], cookie)
        elapsed = (time.perf_counter() - began) * 1000
        if status != 200:
            errors.append(f"{label}: {status}")
        samples[label].append(elapsed)


async def _load(port: int, cookies: list[str], seconds: float) -> tuple[dict[str, list[float]], list[str], float]:
    samples: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []
    # A short warm-up first (each gunicorn worker's first requests import and cache).
    warm_until = time.monotonic() + 2
    await asyncio.gather(*(_user(port, c, i, warm_until, defaultdict(list), []) for i, c in enumerate(cookies)))
    began = time.monotonic()
    until = began + seconds
    await asyncio.gather(*(_user(port, c, i, until, samples, errors) for i, c in enumerate(cookies)))
    return samples, errors, time.monotonic() - began


def _report(title: str, samples: dict[str, list[float]], errors: list[str], elapsed: float) -> None:
    total = sum(len(v) for v in samples.values())
    everything = [s for v in samples.values() for s in v]
    failed = f", {len(errors)} errors e.g. {errors[:3]}" if errors else ""
    print(f"\n{title}: {total / elapsed:7.1f} requests/s, all pages p50 {percentile(everything, 0.5):7.1f} ms, "
          f"p95 {percentile(everything, 0.95):7.1f} ms{failed}")
    for label in PAGES:
        times = samples.get(label) or [0.0]
        p95 = percentile(times, 0.95)
        print(f"  {label:22} n={len(times):5d}  p50 {percentile(times, 0.5):7.1f} ms  p95 {p95:7.1f} ms"
              f"  {'ok' if p95 <= BUDGET_P95_MS else 'OVER'}")


class _Floor:
    """Pre-serialised responses of each page's size, written by an asyncio server in a process of
    its own (as gunicorn is), on a new connection per request as gunicorn's sync workers do."""

    def __init__(self, sizes: dict[str, int]) -> None:
        script = (
            "import asyncio, sys, json\n"
            "sizes = json.loads(sys.argv[1])\n"
            "bodies = {p: b'HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\nConnection: close\\r\\n\\r\\n' % n + b'x' * n"
            " for p, n in sizes.items()}\n"
            "async def serve(reader, writer):\n"
            "    line = await reader.readline()\n"
            "    while (await reader.readline()) not in (b'\\r\\n', b''):\n"
            "        pass\n"
            "    writer.write(bodies.get(line.split()[1].decode(), bodies['/']))\n"
            "    await writer.drain(); writer.close()\n"
            "async def main():\n"
            "    server = await asyncio.start_server(serve, '127.0.0.1', 0, backlog=512)\n"
            "    print(server.sockets[0].getsockname()[1], flush=True)\n"
            "    await server.serve_forever()\n"
            "asyncio.run(main())\n"
        )
        import json

        self.process = subprocess.Popen([sys.executable, "-c", script, json.dumps(sizes)], stdout=subprocess.PIPE,
                                        text=True)
        self.port = int(self.process.stdout.readline())  # type: ignore[union-attr]

    def close(self) -> None:
        self.process.terminate()
        self.process.wait()


def _seed(apps: int) -> None:
    """bench/pages.py's fleet: 30 clusters over four environments, 100 services."""
    from pages import Fleet, analyze, seed

    seed(Fleet(apps, 30, 100))
    analyze()


def _sessions(count: int) -> list[str]:
    """Signed-in sessions made as the login view makes them, without the login round trip."""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
    from django.contrib.sessions.backends.db import SessionStore

    from portal.kernel.accounts.roles import Role, grant

    cookies = []
    for n in range(count):
        user = get_user_model().objects.create_user(f"load-{n}")
        grant(user, Role.MEMBER)  # members see every offer a page makes
        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]  # the portal's own
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        cookies.append(f"{settings.SESSION_COOKIE_NAME}={session.session_key}")
    return cookies


def _serve(database: str, workers: int, threads: int, var_dir: str) -> tuple[subprocess.Popen, int]:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "DATABASE_URL": database, "PORTAL_VAR_DIR": var_dir, "ALLOWED_HOSTS": "127.0.0.1",
           "DEBUG": "0"}
    command = [str(GUNICORN), "portal.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", str(workers),
               "--backlog", "512"]
    if threads > 1:
        command += ["--threads", str(threads)]
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while True:
        try:
            status, _ = asyncio.run(_get(port, "/healthz", ""))
            if status == 200:
                return server, port
        except OSError:
            pass
        if time.monotonic() > deadline or server.poll() is not None:
            raise SystemExit("gunicorn did not start")
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--apps", type=int, default=1200)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--users", default="1,10,30")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn workers [4, as the chart and compose run]")
    parser.add_argument("--threads", type=int, default=1, help="gunicorn threads per worker (gthread when > 1)")
    args = parser.parse_args()
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        raise SystemExit("set DATABASE_URL to a PostgreSQL server: production serves from one")
    users = [int(n) for n in args.users.split(",")]
    with bench_database():
        from django.db import connection

        started = time.perf_counter()
        _seed(args.apps)
        print(f"seeded {args.apps} apps in {time.perf_counter() - started:.0f} s; VACUUM ANALYZE as autovacuum would")
        cookies = _sessions(max(users))
        database = urlunsplit(urlsplit(url)._replace(path="/" + connection.settings_dict["NAME"]))
        connection.close()  # the server's workers are the database's only clients while measuring
        with tempfile.TemporaryDirectory() as var_dir:
            server, port = _serve(database, args.workers, args.threads, var_dir)
            try:
                sizes = {path: asyncio.run(_get(port, path, cookies[0]))[1] for path in PAGES.values()}
                floor = _Floor(sizes)
                try:
                    for count in users:
                        f_samples, f_errors, f_elapsed = asyncio.run(_load(floor.port, cookies[:count], args.seconds))
                        samples, errors, elapsed = asyncio.run(_load(port, cookies[:count], args.seconds))
                        floor_rate = sum(len(v) for v in f_samples.values()) / f_elapsed
                        rate = sum(len(v) for v in samples.values()) / elapsed
                        if errors:
                            raise SystemExit(f"the portal answered errors, the figures would mean nothing: "
                                             f"{errors[:5]}")
                        _report(f"{count} users, portal (gunicorn {args.workers}x{args.threads})", samples, errors,
                                elapsed)
                        print(f"  floor (same client, pre-serialised bytes): {floor_rate:.0f} requests/s; "
                              f"the portal serves {rate / floor_rate:.3f} of it")
                finally:
                    floor.close()
            finally:
                server.send_signal(signal.SIGTERM)
                server.wait(timeout=30)
        print(f"\nbudget: p95 ≤ {BUDGET_P95_MS} ms per page at 30 users (issue 37); "
              f"page sizes (bytes): {sizes}")


if __name__ == "__main__":
    main()
