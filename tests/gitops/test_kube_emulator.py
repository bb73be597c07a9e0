"""The emulator's own contract, checked with plain HTTP so the source tests can trust it."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest

from gitops.kinds import KINDS
from tests.fakes.kube_emulator import Fault, KubeEmulator

DEPLOYMENT = next(k for k in KINDS if k.kind == "Deployment")


def get(emulator: KubeEmulator, path: str, token: str | None = "use-emulator") -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(emulator.url + path)
    bearer = emulator.token if token == "use-emulator" else token
    if bearer is not None:
        request.add_header("Authorization", f"Bearer {bearer}")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_unknown_resource_is_a_404_status(kube_emulator: KubeEmulator) -> None:
    status, body = get(kube_emulator, "/apis/argoproj.io/v1alpha1/rollouts")

    assert status == 404
    assert body["kind"] == "Status" and body["reason"] == "NotFound" and body["code"] == 404
    assert body["message"] == "the server could not find the requested resource"


def test_missing_or_wrong_token_is_a_401_status(kube_emulator: KubeEmulator) -> None:
    kube_emulator.install("apps/v1", "deployments")

    assert get(kube_emulator, "/apis/apps/v1/deployments", token=None)[0] == 401
    status, body = get(kube_emulator, "/apis/apps/v1/deployments", token="nope")
    assert (status, body["reason"], body["message"]) == (401, "Unauthorized", "Unauthorized")
    assert get(kube_emulator, "/apis/apps/v1/deployments")[0] == 200


def test_typed_lists_strip_item_types_and_crd_lists_keep_them(kube_emulator: KubeEmulator) -> None:
    kube_emulator.add({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a", "namespace": "x"}})
    kube_emulator.add({"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
                       "metadata": {"name": "r", "namespace": "x"}})

    _, deployments = get(kube_emulator, "/apis/apps/v1/deployments")
    _, rollouts = get(kube_emulator, "/apis/argoproj.io/v1alpha1/namespaces/x/rollouts")

    assert deployments["kind"] == "DeploymentList" and "kind" not in deployments["items"][0]
    assert rollouts["items"][0]["kind"] == "Rollout"
    assert int(deployments["metadata"]["resourceVersion"]) > 0


def test_core_group_and_default_plural(kube_emulator: KubeEmulator) -> None:
    kube_emulator.add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "x"}})

    status, body = get(kube_emulator, "/api/v1/namespaces/x/configmaps")

    assert status == 200 and [i["metadata"]["name"] for i in body["items"]] == ["c"]
    assert get(kube_emulator, "/api/v1/namespaces/y/configmaps")[1]["items"] == []


def test_continue_tokens_page_through_and_bad_tokens_are_rejected(kube_emulator: KubeEmulator) -> None:
    kube_emulator.add_synthetic(DEPLOYMENT, 5, namespaces=2)

    names: list[str] = []
    path = "/apis/apps/v1/deployments?limit=2"
    while True:
        status, body = get(kube_emulator, path)
        assert status == 200
        names.extend(i["metadata"]["name"] for i in body["items"])
        token = body["metadata"].get("continue")
        if not token:
            break
        path = f"/apis/apps/v1/deployments?limit=2&continue={token}"

    assert sorted(names) == sorted(set(names)) and len(names) == 5
    assert get(kube_emulator, "/apis/apps/v1/deployments?limit=2&continue=%%%")[0] == 400


def test_fault_times_and_pages(kube_emulator: KubeEmulator) -> None:
    kube_emulator.install("apps/v1", "deployments")
    kube_emulator.fail("deployments.apps", Fault.server_error(times=1))

    assert get(kube_emulator, "/apis/apps/v1/deployments")[0] == 500
    assert get(kube_emulator, "/apis/apps/v1/deployments")[0] == 200
    assert [r.status for r in kube_emulator.requests_for(DEPLOYMENT)] == [500, 200]


def test_forbidden_names_user_resource_and_namespace(kube_emulator: KubeEmulator) -> None:
    kube_emulator.install("apps/v1", "deployments")
    kube_emulator.fail(DEPLOYMENT, Fault.forbidden())

    status, body = get(kube_emulator, "/apis/apps/v1/namespaces/shop/deployments")

    assert status == 403 and body["reason"] == "Forbidden"
    assert body["message"] == (
        f'deployments.apps is forbidden: User "{kube_emulator.user}" cannot list resource "deployments" '
        'in API group "apps" in the namespace "shop"'
    )


def test_a_held_request_answers_once_released(kube_emulator: KubeEmulator) -> None:
    kube_emulator.install("apps/v1", "deployments")
    release = threading.Event()
    fault = kube_emulator.fail(DEPLOYMENT, Fault.delay(release, times=1))
    answers: list[int] = []
    waiter = threading.Thread(target=lambda: answers.append(get(kube_emulator, "/apis/apps/v1/deployments")[0]))

    waiter.start()
    assert fault.reached.wait(timeout=5)
    assert answers == []  # the request arrived and is held: nothing answered yet
    release.set()
    waiter.join(timeout=5)

    assert answers == [200]


def test_warm_pre_serialises_every_page(kube_emulator: KubeEmulator) -> None:
    kube_emulator.add_synthetic(DEPLOYMENT, 1200)

    assert kube_emulator.warm(DEPLOYMENT, 500) == 3
    status, body = get(kube_emulator, "/apis/apps/v1/deployments?limit=500")
    assert status == 200 and len(body["items"]) == 500 and body["metadata"]["remainingItemCount"] == 700


def test_add_needs_a_typed_named_object(kube_emulator: KubeEmulator) -> None:
    with pytest.raises(ValueError):
        kube_emulator.add({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {}})
