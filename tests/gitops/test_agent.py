"""In-cluster agents (gitops.sources.agent, POST /api/v1/agents/<cluster>/snapshots): a pushed cluster
is stored exactly as a polled one; a token writes its own cluster only; a replayed snapshot,
a revoked token, an oversized body and a connection cut mid-push each do what they should.

The agents here are the real `Agent` reading the Kubernetes API emulator over HTTP with the
official client, pushing to a live portal (pytest-django's live server)."""

from __future__ import annotations

import gzip
import json
import socket
import threading
import time
from datetime import timedelta

import pytest
import requests
from django.utils import timezone

from gitops import kinds
from gitops.listing import list_capabilities
from gitops.models import ClusterPoll, GitOpsApp, Workload
from gitops.polling import poll
from gitops.sources.agent import SEQUENCE_HEADER, Agent, AgentStopped, ReplaySource, decode, encode, read_snapshot
from gitops.sources.kube import KubeSource
from gitops.tasks import mark_silent_agents, poll_all
from portal.kernel.audit.models import AuditLog
from portal.kernel.catalog import agents as agent_tokens
from portal.kernel.catalog.models import Cluster, Environment
from tests.fakes.kube_emulator import Fault, KubeEmulator
from tests.gitops.test_topology_poll import application, deployment, hub_fleet, serve  # noqa: F401 - fixture


def fleet_objects(name: str) -> list[dict]:
    app = application(f"{name}-web", {"server": "https://kubernetes.default.svc"},
                      images=(f"ghcr.io/acme/{name}:1.0.0",))
    app["status"]["resources"] = [{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "shop",
                                   "name": f"{name}-web", "status": "Synced"}]
    return [app, deployment(f"{name}-web", f"ghcr.io/acme/{name}:1.0.0", 2)]


def emulator_source(emulator: KubeEmulator, name: str):
    return lambda: KubeSource.from_url(emulator.url, emulator.token, name=name)


def agent_cluster(name: str, environment: Environment) -> tuple[Cluster, str]:
    cluster = Cluster.objects.create(name=name, environment=environment, connection=Cluster.Connection.AGENT)
    _row, token = agent_tokens.issue(cluster, "ada")
    return cluster, token


@pytest.fixture
def prod(db):
    return Environment.objects.create(name="prod", order=3, production=True)


# ------------------------------------------------------------------ replay equals the poll


@pytest.mark.django_db
def test_a_replayed_snapshot_reads_exactly_what_the_source_read(kube_emulator):
    serve(kube_emulator, fleet_objects("shop"))
    kube_emulator.fail(kinds.KINDS[1], Fault.forbidden())  # AppProjects: a 403 travels too
    source = emulator_source(kube_emulator, "c1")()
    direct = list_capabilities(source)
    snapshot = decode([encode(read_snapshot("c1", emulator_source(kube_emulator, "c1")()))])
    replayed = list_capabilities(ReplaySource("c1", snapshot))
    assert replayed.objects == direct.objects and replayed.objects["Application"]
    assert replayed.listed == direct.listed
    assert replayed.unavailable == direct.unavailable
    assert "sync windows unavailable: no permission to list appprojects.argoproj.io" in replayed.unavailable.values()
    assert replayed.warnings == direct.warnings


@pytest.mark.django_db
def test_a_pushed_cluster_is_stored_as_the_same_cluster_polled(kube_emulator, prod, monkeypatch):
    serve(kube_emulator, fleet_objects("shop"))
    monkeypatch.setenv("AGENT_TEST_TOKEN", kube_emulator.token)
    polled = Cluster.objects.create(name="polled", environment=prod, connection=Cluster.Connection.API,
                                    api_url=kube_emulator.url, token_env="AGENT_TEST_TOKEN")
    pushed = Cluster.objects.create(name="pushed", environment=prod, connection=Cluster.Connection.AGENT)
    assert poll(polled).ok
    snapshot = decode([encode(read_snapshot("pushed", emulator_source(kube_emulator, "pushed")()))])
    assert poll(pushed, source=ReplaySource("pushed", snapshot)).ok

    def rows(cluster):
        return sorted(GitOpsApp.objects.filter(cluster=cluster).values_list(
            "name", "sync_status", "health_status", "synced_revision", "images")), sorted(
            Workload.objects.filter(cluster=cluster).values_list("kind", "namespace", "name", "replicas_ready"))

    assert rows(polled) == rows(pushed) and rows(pushed)[0]


@pytest.mark.django_db
def test_an_agent_cluster_is_never_polled_from_the_portal(prod):
    cluster, _ = agent_cluster("edge", prod)
    assert poll_all() == 0
    assert "its agent pushes it" in poll(cluster).skipped


@pytest.mark.django_db
def test_an_agent_silent_for_three_intervals_leaves_its_cluster_stale_with_its_data(prod, settings):
    settings.PORTAL_POLL_INTERVAL = 60
    cluster, _ = agent_cluster("edge", prod)
    now = timezone.now()
    assert mark_silent_agents(now) == 0  # never reported: "not polled yet", not stale
    ClusterPoll.objects.create(cluster=cluster, last_poll_at=now - timedelta(seconds=170), last_ok_at=now)
    assert mark_silent_agents(now) == 0
    ClusterPoll.objects.filter(cluster=cluster).update(last_poll_at=now - timedelta(seconds=181))
    assert mark_silent_agents(now) == 1
    cluster.refresh_from_db()
    assert cluster.poll.stale_since == now - timedelta(seconds=121)
    assert cluster.poll.last_error.startswith("the agent has not reported since ")
    assert cluster.poll.last_ok_at == now  # the last good data stays
    assert mark_silent_agents(now) == 0  # once


# ------------------------------------------------------------------ the endpoint, over HTTP


def _post(live_server, cluster: str, token: str, snapshot: dict, *, body: bytes | None = None) -> requests.Response:
    return requests.post(
        f"{live_server.url}/api/v1/agents/{cluster}/snapshots", data=body if body is not None else encode(snapshot),
        headers={"Authorization": f"Bearer {token}", "Content-Encoding": "gzip",
                 SEQUENCE_HEADER: str(snapshot["sequence"])}, timeout=30)


@pytest.mark.django_db(transaction=True)
def test_twenty_agents_push_their_clusters_and_each_is_stored(live_server, prod):
    emulators = [KubeEmulator().start() for _ in range(20)]
    try:
        agents = []
        for index, emulator in enumerate(emulators):
            name = f"edge-{index:02d}"
            serve(emulator, fleet_objects(name))
            _cluster, token = agent_cluster(name, prod)
            agents.append(Agent(name, live_server.url, token, emulator_source(emulator, name), interval=30,
                                max_backoff=0.5))
        threads = [threading.Thread(target=agent.run, kwargs={"iterations": 1}) for agent in agents]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert [agent.pushed for agent in agents] == [1] * 20
        stored = dict(GitOpsApp.objects.values_list("cluster__name", "name"))
        assert stored == {f"edge-{i:02d}": f"edge-{i:02d}-web" for i in range(20)}
        assert all(c.poll.last_ok_at and not c.poll.stale_since for c in Cluster.objects.select_related("poll"))
    finally:
        for emulator in emulators:
            emulator.stop()


@pytest.mark.django_db(transaction=True)
def test_a_token_writes_only_its_own_cluster_and_the_refusal_is_audited(live_server, prod, kube_emulator):
    serve(kube_emulator, fleet_objects("a"))
    _a, token_a = agent_cluster("edge-a", prod)
    agent_cluster("edge-b", prod)
    snapshot = read_snapshot("edge-b", emulator_source(kube_emulator, "edge-b")())
    answer = _post(live_server, "edge-b", token_a, snapshot)
    assert answer.status_code == 403
    assert not GitOpsApp.objects.exists()
    refusal = AuditLog.objects.get(action="agent.refused")
    assert refusal.target == "edge-b" and refusal.details["token_cluster"] == "edge-a"
    assert token_a not in json.dumps(refusal.details)
    assert _post(live_server, "edge-a", "gpa_not-a-token", snapshot).status_code == 401


@pytest.mark.django_db(transaction=True)
def test_a_replayed_older_snapshot_is_refused(live_server, prod, kube_emulator):
    serve(kube_emulator, fleet_objects("a"))
    _cluster, token = agent_cluster("edge-a", prod)
    older = read_snapshot("edge-a", emulator_source(kube_emulator, "edge-a")())
    newer = read_snapshot("edge-a", emulator_source(kube_emulator, "edge-a")())
    assert _post(live_server, "edge-a", token, newer).status_code == 200
    assert _post(live_server, "edge-a", token, older).status_code == 409
    assert _post(live_server, "edge-a", token, newer).status_code == 409  # the same one again
    assert AuditLog.objects.filter(action="agent.replay_refused").count() == 2


@pytest.mark.django_db(transaction=True)
def test_an_oversized_or_broken_body_is_refused_and_stores_nothing(live_server, prod, kube_emulator, settings):
    serve(kube_emulator, fleet_objects("a"))
    _cluster, token = agent_cluster("edge-a", prod)
    snapshot = read_snapshot("edge-a", emulator_source(kube_emulator, "edge-a")())
    settings.PORTAL_AGENT_MAX_SNAPSHOT_BYTES = len(json.dumps(snapshot)) // 2
    too_large = _post(live_server, "edge-a", token, snapshot)
    assert too_large.status_code == 413 and "larger than" in too_large.json()["detail"]
    # A gzip bomb: a megabyte of zeros inflates past a 64 KiB limit without being inflated whole.
    settings.PORTAL_AGENT_MAX_SNAPSHOT_BYTES = 64 * 1024
    assert _post(live_server, "edge-a", token, snapshot, body=gzip.compress(b"0" * (1 << 20))).status_code == 413
    settings.PORTAL_AGENT_MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024
    assert _post(live_server, "edge-a", token, snapshot, body=b"not gzip").status_code == 400
    assert _post(live_server, "edge-a", token, snapshot, body=gzip.compress(b"{}")).status_code == 400
    assert not GitOpsApp.objects.exists()
    assert _post(live_server, "edge-a", token, snapshot).status_code == 200  # and the real one goes in


@pytest.mark.django_db(transaction=True)
def test_a_revoked_token_stops_its_agent_only(live_server, prod):
    with KubeEmulator() as one, KubeEmulator() as two:
        serve(one, fleet_objects("one"))
        serve(two, fleet_objects("two"))
        _c1, token_one = agent_cluster("edge-1", prod)
        _c2, token_two = agent_cluster("edge-2", prod)
        first = Agent("edge-1", live_server.url, token_one, emulator_source(one, "edge-1"), interval=0.1)
        second = Agent("edge-2", live_server.url, token_two, emulator_source(two, "edge-2"), interval=0.1)
        first.run(iterations=1)
        agent_tokens.revoke(agent_tokens.active(token_one))
        with pytest.raises(AgentStopped, match="token refused"):
            first.run(iterations=1)
        second.run(iterations=3)
        assert (first.pushed, second.pushed) == (1, 3)


class _CutOnce:
    """A TCP proxy in front of the portal that drops the first connection halfway through its
    request, as a portal restarting mid-push would; later connections pass through."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.cut = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(client,), daemon=True).start()

    def _handle(self, client: socket.socket) -> None:
        if self.cut == 0:
            self.cut += 1
            client.recv(2048)  # part of the request, then the "restart"
            client.close()
            return
        upstream = socket.create_connection(("127.0.0.1", self.target_port))

        def pipe(src: socket.socket, dst: socket.socket) -> None:
            try:
                while data := src.recv(65536):
                    dst.sendall(data)
            except OSError:
                pass
            finally:
                for s in (src, dst):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
        pipe(upstream, client)

    def close(self) -> None:
        self.listener.close()


@pytest.mark.django_db(transaction=True)
def test_a_push_cut_by_a_portal_restart_is_sent_again_and_stored(live_server, prod, kube_emulator):
    serve(kube_emulator, fleet_objects("a"))
    _cluster, token = agent_cluster("edge-a", prod)
    proxy = _CutOnce(int(live_server.url.rsplit(":", 1)[1]))
    try:
        agent = Agent("edge-a", f"http://127.0.0.1:{proxy.port}", token, emulator_source(kube_emulator, "edge-a"),
                      interval=30, max_backoff=0.2)
        agent.run(iterations=1)
    finally:
        proxy.close()
    assert proxy.cut == 1 and agent.pushed == 1
    assert GitOpsApp.objects.filter(cluster__name="edge-a", name="a-web").exists()


@pytest.mark.django_db(transaction=True)
def test_the_agent_command_pushes_once_and_stops_on_a_refused_token(live_server, prod, kube_emulator, monkeypatch,
                                                                    tmp_path):
    from django.core.management import CommandError, call_command

    serve(kube_emulator, fleet_objects("a"))
    _cluster, token = agent_cluster("edge-a", prod)
    monkeypatch.setenv("PORTAL_AGENT_TOKEN", token)
    monkeypatch.setenv("AGENT_TEST_API_TOKEN", kube_emulator.token)
    arguments = ["agent", "--cluster", "edge-a", "--portal", live_server.url, "--api-url", kube_emulator.url,
                 "--api-token-env", "AGENT_TEST_API_TOKEN", "--once"]
    heartbeat = tmp_path / "agent-heartbeat"
    call_command(*arguments, "--heartbeat-file", str(heartbeat))
    assert GitOpsApp.objects.filter(cluster__name="edge-a").exists()
    assert heartbeat.exists()  # the liveness probe's file (the chart checks its age)
    agent_tokens.revoke(agent_tokens.active(token))
    with pytest.raises(CommandError, match="token refused"):
        call_command(*arguments)
    monkeypatch.delenv("PORTAL_AGENT_TOKEN")
    with pytest.raises(CommandError, match="no agent token"):
        call_command(*arguments)


@pytest.mark.django_db
def test_a_hub_agent_reports_its_applications_for_their_destination_clusters(hub_fleet, kube_emulator):  # noqa: F811
    """A hub the portal cannot reach runs the agent: its Applications are filed under their
    destinations exactly as when the hub is polled (gitops.derive.topology, through the same poll)."""
    hub = hub_fleet["hub"]
    Cluster.objects.filter(pk=hub.pk).update(connection=Cluster.Connection.AGENT)
    snapshot = decode([encode(read_snapshot("hub", emulator_source(kube_emulator, "hub")()))])
    assert poll(Cluster.objects.get(pk=hub.pk), source=ReplaySource("hub", snapshot)).ok
    where = dict(GitOpsApp.objects.values_list("name", "cluster__name"))
    assert where["checkout-prod"] == "prod-eu-1" and where["checkout-staging"] == "staging-1"
    assert where["platform-tools"] == "hub" and where["checkout-edge"] == "edge"
    assert GitOpsApp.objects.get(name="checkout-prod").sync_blocked  # the hub's AppProject window


class _Portal:
    """A portal that answers each push with the next status of `statuses` and records its sequence."""

    def __init__(self, statuses: list[int]) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.statuses = list(statuses)
        self.sequences: list[int] = []
        portal = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers["Content-Length"]))
                portal.sequences.append(int(self.headers[SEQUENCE_HEADER]))
                status = portal.statuses.pop(0) if portal.statuses else 200
                body = json.dumps({"detail": f"answered {status}"}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize(("statuses", "pushes", "stored"), [
    ([503, 502, 200], 3, 1),  # a failing portal: the same snapshot again, with backoff, until stored
    ([413], 1, 0),  # too large: dropped, the agent goes on
    ([409], 1, 0),  # older than one stored: dropped
])
def test_the_agent_retries_what_may_succeed_and_drops_what_never_will(kube_emulator, statuses, pushes, stored):
    serve(kube_emulator, fleet_objects("a"))
    portal = _Portal(statuses)
    try:
        agent = Agent("edge-a", portal.url, "gpa_x", emulator_source(kube_emulator, "edge-a"), interval=30,
                      max_backoff=0.05)
        agent.run(iterations=1)
    finally:
        portal.close()
    assert (len(portal.sequences), agent.pushed) == (pushes, stored)
    assert len(set(portal.sequences)) == 1  # one read, sent again


def test_a_retry_that_would_outlast_the_interval_gives_way_to_a_newer_snapshot(kube_emulator):
    serve(kube_emulator, fleet_objects("a"))
    portal = _Portal([503] * 10)
    try:
        agent = Agent("edge-a", portal.url, "gpa_x", emulator_source(kube_emulator, "edge-a"), interval=0.3,
                      max_backoff=5.0)
        agent.run(iterations=3)
    finally:
        portal.close()
    # Each read was pushed once and then replaced by the next read: never an older one again.
    assert len(portal.sequences) == 3 and portal.sequences == sorted(set(portal.sequences))


def test_backoff_grows_is_capped_and_jittered():
    agent = Agent("c", "http://127.0.0.1:9", "gpa_x", lambda: None, max_backoff=60, rng=lambda: 1.0)
    assert [agent.backoff(n) for n in (1, 2, 3, 10)] == [2.0, 4.0, 8.0, 60.0]
    agent = Agent("c", "http://127.0.0.1:9", "gpa_x", lambda: None, max_backoff=60, rng=lambda: 0.0)
    assert agent.backoff(3) == 4.0  # the lower half of the ceiling


@pytest.mark.django_db
def test_a_pushed_cluster_is_judged_by_the_health_rules_of_its_argocd_cm(kube_emulator, prod):
    """The agent reads argocd-cm and the custom kinds its rules cover, as a poll does."""
    from tests.gitops.decisionmodel import argocd_cm
    from tests.gitops.test_health_rules import TABLE
    from tests.gitops.test_health_rules_poll import application as dm_application
    from tests.gitops.test_health_rules_poll import model_for, slug
    from tests.gitops.test_health_rules_poll import serve as serve_models

    case = "RolledBack"
    serve_models(kube_emulator, [argocd_cm(), model_for(case), dm_application(case, argo_health=TABLE[case][0][0])])
    cluster = Cluster.objects.create(name="edge-dm", environment=prod, connection=Cluster.Connection.AGENT)
    snapshot = decode([encode(read_snapshot("edge-dm", emulator_source(kube_emulator, "edge-dm")()))])
    assert poll(cluster, source=ReplaySource("edge-dm", snapshot)).ok
    assert GitOpsApp.objects.get(name=f"app-{slug(case)}").rule_health == TABLE[case][0][0]


def test_the_loop_signals_life_while_the_portal_is_down_but_not_while_a_read_hangs(kube_emulator):
    """Liveness means "the loop turns": an unreachable portal keeps it turning (a restart would cure
    nothing), a read that never returns stops it (a restart might)."""
    serve(kube_emulator, fleet_objects("a"))
    portal = _Portal([503] * 10)
    beats: list[float] = []
    try:
        agent = Agent("edge-a", portal.url, "gpa_x", emulator_source(kube_emulator, "edge-a"), interval=0.2,
                      max_backoff=0.05, alive=lambda: beats.append(time.monotonic()))
        agent.run(iterations=2)
    finally:
        portal.close()
    assert len(beats) >= 4  # each read begins with one, each answered push adds one

    hanging = threading.Event()
    hung_beats: list[float] = []

    def stuck_source():
        hanging.wait(5)  # a read that does not come back (an API server that never answers)
        raise TimeoutError("read hung")

    stop = threading.Event()
    agent = Agent("edge-a", "http://127.0.0.1:9", "gpa_x", stuck_source, interval=0.05,
                  alive=lambda: hung_beats.append(time.monotonic()))
    runner = threading.Thread(target=agent.run, args=(stop,), daemon=True)
    runner.start()
    time.sleep(0.5)
    assert len(hung_beats) == 1  # the turn that began the read, and nothing since
    stop.set()
    hanging.set()
    runner.join(5)
