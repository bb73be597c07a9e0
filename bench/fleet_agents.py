"""The agents of bench/fleet.py's agent mode: many in-cluster agents as threads of one process.

    python bench/fleet_agents.py SPEC.json

Each thread is the portal's own `gitops.sources.agent.Agent` — the code `manage.py agent` runs — reading
its cluster through `KubeSource.from_url` (the cluster's nginx prefix, with the bench's API
token) and pushing every snapshot to the portal's gunicorn, every `interval` seconds. The
agents start spread over one interval (agent i of n waits i/n of it first), as agents started
at different times would be, so the portal sees a steady stream rather than a burst a minute.
The spec (written 0600 by bench/fleet.py) holds the agent tokens, so no token is on a command
line. On SIGTERM the agents stop; the process prints one JSON line: snapshots stored per agent.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any


def main() -> None:
    spec: dict[str, Any] = json.loads(Path(sys.argv[1]).read_text())
    import django

    django.setup()  # the agent reads the portal's kinds and settings; it makes no query
    from gitops.sources.agent import Agent, AgentStopped
    from gitops.sources.kube import KubeSource

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s")
    api_token = os.environ[spec["api_token_env"]]
    interval = float(spec["interval"])
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    agents: list[Agent] = []
    threads = []
    for entry in spec["agents"]:
        def source(url: str = entry["api_url"], name: str = entry["cluster"]) -> KubeSource:
            return KubeSource.from_url(url, api_token, name=name)

        agent = Agent(entry["cluster"], spec["portal"], entry["token"], source, interval=interval,
                      max_backoff=interval / 2)
        agents.append(agent)

        def run(agent: Agent = agent, offset: float = float(entry["offset"])) -> None:
            if stop.wait(offset):
                return
            try:
                agent.run(stop)
            except AgentStopped:
                pass  # logged by the agent; the others go on

        threads.append(threading.Thread(target=run, name=entry["cluster"], daemon=True))
    for thread in threads:
        thread.start()
    stop.wait()
    for thread in threads:
        thread.join(timeout=60)
    print(json.dumps({agent.cluster: agent.pushed for agent in agents}), flush=True)


if __name__ == "__main__":
    main()
