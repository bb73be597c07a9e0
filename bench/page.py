"""One page's server time on an existing, seeded database, for one checkout or several taking
turns (a before/after figure on a shared machine, whose speed drifts from minute to minute).

bench/pages.py seeds its fleets afresh on every run (minutes at 50,000 applications); this
reads a database seeded once (e.g. a copy of one bench/pages.py left, `createdb -T`), and
prints wall and CPU milliseconds per request (p50, p95) and the HTML bytes:

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/fleet50k .venv/bin/python bench/page.py \
        /services/svc000 /delivery --trees /tmp/before,. --repeat 30

Each tree runs in its own process (its own imports); a user "bench" with the member role is
created in that database when missing (the pages then show every offer a member sees).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def serve(tree: Path) -> None:
    """The child: Django from `tree` on DATABASE_URL; answers `url count` lines with JSON."""
    import time

    sys.path.insert(0, str(tree))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.test.utils import setup_test_environment

    from portal.kernel.accounts.roles import Role, grant
    from portal.wsgi import freeze_startup_objects

    setup_test_environment()
    user, _ = get_user_model().objects.get_or_create(username="bench")
    grant(user, Role.MEMBER)
    client = Client()
    client.force_login(user)
    freeze_startup_objects()
    for command in sys.stdin:
        url, count = command.split()
        body = client.get(url).content  # warm: connection, caches
        wall, cpu = [], []
        for _ in range(int(count)):
            started, used = time.perf_counter(), time.process_time()
            response = client.get(url)
            wall.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - used) * 1000)
            assert response.status_code == 200, (url, response.status_code)
        print(json.dumps({"wall": wall, "cpu": cpu, "bytes": len(body)}), flush=True)


def main() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    from harness import percentile

    parser = argparse.ArgumentParser()
    parser.add_argument("urls", nargs="+")
    parser.add_argument("--trees", default=".", help="checkouts to compare, comma-separated (first: before)")
    parser.add_argument("--repeat", type=int, default=20, help="requests per page and tree")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(Path(args.serve))
        return
    trees = [Path(tree).resolve() for tree in args.trees.split(",")]
    children = {
        tree: subprocess.Popen([sys.executable, __file__, "--serve", str(tree), "x"], cwd=tree, text=True,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        for tree in trees
    }
    samples: dict[tuple[Path, str], dict[str, list[float]]] = {}
    per_turn = 5
    try:
        for _ in range(max(1, -(-args.repeat // per_turn))):
            for url in args.urls:
                for tree, child in children.items():
                    assert child.stdin is not None and child.stdout is not None
                    child.stdin.write(f"{url} {per_turn}\n")
                    child.stdin.flush()
                    got = json.loads(child.stdout.readline())
                    into = samples.setdefault((tree, url), {"wall": [], "cpu": [], "bytes": []})
                    into["wall"] += got["wall"]
                    into["cpu"] += got["cpu"]
                    into["bytes"] = [got["bytes"]]
    finally:
        for child in children.values():
            assert child.stdin is not None
            child.stdin.close()
            child.wait()
    print(f"{'page':32} {'tree':28} {'wall p50/p95 ms':>16} {'cpu p50/p95 ms':>16} {'KB':>8}")
    for url in args.urls:
        for tree in trees:
            s = samples[(tree, url)]
            print(f"{url:32} {str(tree)[-28:]:28} {percentile(s['wall'], .5):7.1f}/{percentile(s['wall'], .95):7.1f}"
                  f" {percentile(s['cpu'], .5):7.1f}/{percentile(s['cpu'], .95):7.1f} {s['bytes'][0] / 1000:8.1f}")


if __name__ == "__main__":
    main()
