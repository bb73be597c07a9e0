"""Issue 41: one object whose `metadata` is a number or a string never fails a poll.

The reads that run before the collectors' guards (where an Argo CD keeps argocd-cm, the
workloads claimed by unchanged apps, a manifest folder's namespace filter) once did
`(obj.get("metadata") or {}).get(...)`, which raises on `5` or `"x"` and took the whole poll
down. Each test polls the real-object corpus through the Kubernetes API emulator (or a
manifest folder) with such an object among the others, and asserts the poll succeeded, every
other object is stored and a warning names the bad one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from gitops.polling import poll
from portal.kernel.catalog.models import ArgoCDInstance, Cluster
from tests.fakes.kube_emulator import KubeEmulator
from tests.gitops.test_hostile_properties import (
    CLUSTER,
    CORPUS,
    TOKEN_ENV,
    _serve,
    expected_keys,
    load_catalog,
    stored_keys,
)

BAD = "misshapen-metadata"


class MisshapenEmulator(KubeEmulator):
    """The emulator, with the metadata of each object named BAD replaced by `self.metadata`
    in the pages it sends (it could not store such an object: it keys objects by name)."""

    metadata: Any = 5

    def _page(self, *args: Any, **kwargs: Any) -> bytes:
        page = json.loads(super()._page(*args, **kwargs))
        for item in page.get("items") or []:
            if isinstance(item.get("metadata"), dict) and item["metadata"].get("name") == BAD:
                item["metadata"] = self.metadata
        return json.dumps(page).encode()


@pytest.fixture
def emulated(db, monkeypatch) -> Iterator[MisshapenEmulator]:
    load_catalog()
    with MisshapenEmulator() as emulator:
        monkeypatch.setenv(TOKEN_ENV, emulator.token)
        Cluster.objects.filter(name=CLUSTER).update(connection=Cluster.Connection.API, api_url=emulator.url,
                                                    token_env=TOKEN_ENV)
        yield emulator


def _bad(kind: str, api_version: str) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": BAD, "namespace": "argocd"},
            "spec": {}}


def _assert_held(report: Any, kind: str) -> None:
    assert report.ok, report.error
    missing = expected_keys(CORPUS) - stored_keys()
    assert not missing, (missing, report.warnings)
    assert any(kind in w and ("metadata" in w or BAD in w) for w in report.warnings), report.warnings


@pytest.mark.parametrize("metadata", [5, "a string"])
def test_an_application_with_misshapen_metadata_and_no_instance_registered(emulated, metadata):
    # No Argo CD instance on the cluster: argocd_namespaces reads the Applications' namespaces.
    cluster = Cluster.objects.get(name=CLUSTER)
    ArgoCDInstance.objects.filter(cluster=cluster).delete()
    emulated.metadata = metadata
    _serve(emulated, [*CORPUS, _bad("Application", "argoproj.io/v1alpha1")])
    _assert_held(poll(cluster), "Application")


@pytest.mark.parametrize("metadata", [5, "a string"])
def test_a_configmap_with_misshapen_metadata_where_argocd_cm_is_looked_for(emulated, metadata):
    cluster = Cluster.objects.get(name=CLUSTER)
    emulated.metadata = metadata
    _serve(emulated, [*CORPUS, _bad("ConfigMap", "v1")])
    report = poll(cluster)
    assert report.ok, report.error
    assert not expected_keys(CORPUS) - stored_keys(), report.warnings


@pytest.mark.parametrize("metadata", [5, "a string"])
def test_a_manifest_folder_with_misshapen_metadata(db, tmp_path, metadata):
    # A folder filters ConfigMaps by namespace itself (gitops.sources.manifests) when the poll
    # looks for argocd-cm; there the bad ConfigMap once raised, here the Application with it.
    load_catalog()
    cluster = Cluster.objects.get(name=CLUSTER)
    ArgoCDInstance.objects.filter(cluster=cluster).delete()
    (tmp_path / "corpus.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": CORPUS}))
    for kind, api_version in (("ConfigMap", "v1"), ("Application", "argoproj.io/v1alpha1")):
        (tmp_path / f"bad-{kind}.json").write_text(json.dumps({**_bad(kind, api_version), "metadata": metadata}))
    Cluster.objects.filter(pk=cluster.pk).update(connection=Cluster.Connection.MANIFESTS, manifests_path=str(tmp_path))
    _assert_held(poll(Cluster.objects.get(pk=cluster.pk)), "Application")
