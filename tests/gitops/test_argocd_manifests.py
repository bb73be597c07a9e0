"""`ArgoCDSource.manifests`: what an Application renders, asked of Argo CD's API server (its fake)
as `argocd app manifests` asks it: a revision for one source, source positions for many."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gitops.sources import SourceError
from gitops.sources.argocd_api import ArgoCDSource
from tests.fakes.argocd_api import ArgoCDAPIFake

HEAD = "9f1c2ab34d5e6f708192a3b4c5d6e7f8091a2b3c"
CONFIG = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web", "namespace": "shop"},
          "data": {"greeting": "hello"}}


def multi_source_app() -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "namespace": "apps"},
        "spec": {"project": "shop", "destination": {"server": "https://kubernetes.default.svc", "namespace": "shop"},
                 "sources": [
                     {"repoURL": "https://charts.example.com", "chart": "web", "targetRevision": "1.4.0",
                      "helm": {"valueFiles": ["$values/web/values-prod.yaml"]}},
                     {"repoURL": "https://github.com/acme/deploy.git", "targetRevision": "main", "ref": "values"},
                 ]},
    }


@pytest.fixture
def argocd() -> Iterator[ArgoCDAPIFake]:
    with ArgoCDAPIFake() as fake:
        fake.add_application(multi_source_app())
        fake.set_manifests("apps", "web", "1.4.0,main", [CONFIG])
        yield fake


def test_objects_come_back_decoded_from_their_json_texts(argocd: ArgoCDAPIFake) -> None:
    with ArgoCDSource(argocd.url, argocd.token, name="hub") as source:
        assert source.manifests("web", app_namespace="apps", project="shop") == [CONFIG]

    [asked] = argocd.requests_to("/api/v1/applications/web/manifests")
    assert asked.query == [("appNamespace", "apps"), ("project", "shop")]
    assert asked.authorization == f"Bearer {argocd.token}"


def test_a_multi_source_app_is_asked_by_source_position(argocd: ArgoCDAPIFake) -> None:
    edited = {**CONFIG, "data": {"greeting": "hi"}}
    argocd.set_manifests("apps", "web", f"1.4.0,{HEAD}", [edited])
    with ArgoCDSource(argocd.url, argocd.token, name="hub") as source:
        assert source.manifests("web", app_namespace="apps", source_revisions={2: HEAD}) == [edited]
        with pytest.raises(SourceError) as failed:
            source.manifests("web", app_namespace="apps", source_revisions={1: "1.5.0", 2: HEAD})

    asked = argocd.requests_to("/api/v1/applications/web/manifests")
    assert asked[0].query == [("appNamespace", "apps"), ("sourcePositions", "2"), ("revisions", HEAD)]
    assert asked[1].query == [("appNamespace", "apps"), ("sourcePositions", "1"), ("revisions", "1.5.0"),
                              ("sourcePositions", "2"), ("revisions", HEAD)]
    # A revision the repo server cannot fetch: Argo CD's error, told with the app it was for.
    assert failed.value.message.startswith("hub: manifests of apps/web: error generating manifests")


def test_an_app_the_token_may_not_read_is_refused(argocd: ArgoCDAPIFake) -> None:
    with ArgoCDSource(argocd.url, argocd.token, name="hub") as source, pytest.raises(SourceError) as refused:
        source.manifests("payments", app_namespace="apps")

    assert refused.value.status == 403 and "permission denied" in refused.value.message
