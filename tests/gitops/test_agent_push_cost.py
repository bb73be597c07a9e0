"""What a push costs the portal (issue 24): the snapshot is decoded without garbage collections,
its objects are walked for parts cut too deep only when decoding cut some, the agent's text
travels as UTF-8 (so the portal does not walk every string for escapes), and a push gets the
poll's shortcuts — an unchanged cluster writes nothing, a re-stamped app alone is collected.

Snapshots come from the real agent reading the Kubernetes API emulator over HTTP; pushes go
through the endpoint (Django's test client, the whole request path); checks that must still
hold (a too-deep object is skipped by name, every NUL or lone surrogate replaced) are asserted
beside each saving."""

from __future__ import annotations

import copy
import gc
import gzip
import json
from collections.abc import Iterator

import pytest

import gitops.sources.agent
import gitops.sources.decoding
from gitops.listing import list_capabilities
from gitops.models import GitOpsApp
from gitops.rawobjects import MAX_DEPTH
from gitops.sources.agent import SEQUENCE_HEADER, ReplaySource, decode, decode_body, encode, read_snapshot
from portal.kernel.catalog.models import Cluster
from tests.gitops.test_agent import agent_cluster, emulator_source, fleet_objects, prod  # noqa: F401 - fixture
from tests.gitops.test_topology_poll import serve


def _push(client, cluster: str, token: str, snapshot: dict, body: bytes | None = None) -> dict:
    response = client.post(
        f"/api/v1/agents/{cluster}/snapshots", data=encode(snapshot) if body is None else body,
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}", "Content-Encoding": "gzip",
                 SEQUENCE_HEADER: str(snapshot["sequence"])})
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def count_calls(monkeypatch):
    """Counts the calls of a module's function, which still does its work."""

    def wrap(module, name: str) -> list[int]:
        calls = [0]
        real = getattr(module, name)

        def counted(*args, **kwargs):
            calls[0] += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)
        return calls

    return wrap


@pytest.fixture
def eager_collector() -> Iterator[list[int]]:
    """A garbage collector that runs every 10 allocations, counting its collections."""
    collections = [0]

    def seen(phase: str, _info: dict) -> None:
        if phase == "start":
            collections[0] += 1

    threshold = gc.get_threshold()
    gc.set_threshold(10, 1, 1)
    gc.callbacks.append(seen)
    try:
        yield collections
    finally:
        gc.callbacks.remove(seen)
        gc.set_threshold(*threshold)


def _deep(levels: int) -> dict:
    value: dict = {"leaf": True}
    for _ in range(levels):
        value = {"x": value}
    return value


@pytest.mark.django_db
def test_a_clean_snapshot_is_not_walked_for_cut_parts(kube_emulator, count_calls):
    serve(kube_emulator, fleet_objects("shop") + fleet_objects("cart"))
    direct = list_capabilities(emulator_source(kube_emulator, "c1")())
    snapshot, cut = decode_body([encode(read_snapshot("c1", emulator_source(kube_emulator, "c1")()))])
    walks = count_calls(gitops.sources.agent, "holds_cut")
    replayed = list_capabilities(ReplaySource("c1", snapshot, cut=cut))
    assert not cut and walks[0] == 0
    assert replayed.objects == direct.objects and len(replayed.objects["Application"]) == 2
    list_capabilities(ReplaySource("c1", snapshot))  # not told: walked, as before
    assert walks[0] >= 4


@pytest.mark.django_db
def test_a_pushed_object_nested_too_deep_is_still_skipped_by_name(kube_emulator, prod, client):  # noqa: F811
    shop, cart = fleet_objects("shop"), fleet_objects("cart")
    serve(kube_emulator, shop + cart[1:])
    _cluster, token = agent_cluster("edge", prod)
    snapshot = read_snapshot("edge", emulator_source(kube_emulator, "edge")())
    # An agent (hostile, or one whose source keeps such objects) sends an app nested too deep.
    cart[0]["spec"]["source"]["helm"] = {"valuesObject": _deep(MAX_DEPTH + 5)}
    snapshot["calls"]["applications.argoproj.io|"]["items"].append(cart[0])
    assert decode_body([encode(snapshot)])[1]  # decoding cut the deep part out
    answer = _push(client, "edge", token, snapshot)
    assert answer["ok"] and answer["warnings"] >= 1
    assert list(GitOpsApp.objects.values_list("name", flat=True)) == ["shop-web"]
    edge = Cluster.objects.get(name="edge")
    assert any("skipped Application argocd/cart-web: nested deeper than" in w for w in edge.poll.poll_warnings)


@pytest.mark.django_db
def test_a_snapshot_is_decoded_without_a_garbage_collection(kube_emulator, eager_collector):
    serve(kube_emulator, [obj for n in range(40) for obj in fleet_objects(f"svc{n}")])
    body = encode(read_snapshot("c1", emulator_source(kube_emulator, "c1")()))
    text = gzip.decompress(body)
    eager_collector[0] = 0
    decoded = json.loads(text)
    assert eager_collector[0] > 10 and len(decoded["calls"]["applications.argoproj.io|"]["items"]) == 40
    eager_collector[0] = 0  # this collector runs while a snapshot is decoded, unless paused
    snapshot = decode([body])
    # The inflating and the checks around the JSON decoding allocate a few objects of their own.
    assert eager_collector[0] <= 3 and gc.isenabled()
    assert snapshot["calls"]
    with pytest.raises(gitops.sources.agent.SnapshotError):
        decode([gzip.compress(b'{"format": ')])
    assert gc.isenabled()  # a body that is not JSON leaves it on too
    gc.disable()
    try:
        decode([body])
        assert not gc.isenabled()  # paused by someone else: left as found
    finally:
        gc.enable()


@pytest.mark.django_db
def test_the_agent_sends_text_as_utf8_and_the_portal_reads_it_without_walking_every_string(
        kube_emulator, count_calls):
    shop = fleet_objects("shop")
    shop[0]["metadata"]["annotations"] = {"note": "déploiement ✓ 배포 🚀"}
    serve(kube_emulator, shop)
    snapshot = read_snapshot("c1", emulator_source(kube_emulator, "c1")())
    text = gzip.decompress(encode(snapshot))
    assert "배포 🚀".encode() in text and b"\\u" not in text
    walks = count_calls(gitops.sources.decoding, "storable_text")
    assert decode([encode(snapshot)]) == snapshot and walks[0] == 0
    escaped = gzip.compress(json.dumps(snapshot).encode())  # what an agent of the last release sends
    assert decode([escaped]) == snapshot and walks[0] == 1  # read all the same, every string walked


def test_a_lone_surrogate_is_sent_escaped_and_replaced_by_the_portal():
    snapshot = {"format": gitops.sources.agent.FORMAT, "cluster": "c1", "sequence": 1,
                "calls": {"x|": {"items": [{"metadata": {"name": "bad\ud800name"}}]}}}
    assert decode([encode(snapshot)])["calls"]["x|"]["items"][0]["metadata"]["name"] == "bad\ufffdname"


@pytest.mark.django_db
def test_a_push_gets_the_polls_shortcuts_unchanged_restamped_and_only_the_changed_app(kube_emulator, prod, client):  # noqa: F811
    shop, cart = fleet_objects("shop"), fleet_objects("cart")
    serve(kube_emulator, shop + cart)
    _cluster, token = agent_cluster("edge", prod)

    def push() -> dict:
        return _push(client, "edge", token, read_snapshot("edge", emulator_source(kube_emulator, "edge")()))

    assert push()["unchanged"] is False
    answers = [push(), push()]  # the first push registered the cluster's Argo CD: the next one is full
    assert answers[-1]["unchanged"] is True and answers[-1]["collected"] is None
    restamped = copy.deepcopy(cart[0])
    restamped["status"]["reconciledAt"] = "2026-11-29T09:03:00Z"
    kube_emulator.add(restamped)
    answer = push()  # a reconciliation that found nothing to do: its stamps alone moved
    assert answer["unchanged"] is False and answer["collected"] == 0
    degraded = copy.deepcopy(restamped)
    degraded["status"]["health"] = {"status": "Degraded", "message": "back-off restarting"}
    kube_emulator.add(degraded)
    answer = push()
    assert answer["unchanged"] is False and answer["collected"] == 1
    assert GitOpsApp.objects.count() == 2
    assert GitOpsApp.objects.get(name="cart-web").health_status == "Degraded"
