"""A string longer than its column never fails a cluster's write (gitops.store.column_limits), through the real
poll path from a manifest folder. PostgreSQL refuses such text for a varchar; SQLite stores it, so
these tests prove something on PostgreSQL (CI's database)."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
import yaml

from gitops.models import GitOpsApp
from gitops.polling import poll
from portal.kernel.catalog.fleetfile import load_fleet
from portal.kernel.catalog.models import Cluster

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "clusters" / "prod-eu-1"


def demo_application() -> dict:
    for path in sorted(DEMO.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "Application":
                return copy.deepcopy(doc)
    raise AssertionError("the demo cluster has Applications")


@pytest.fixture
def cluster(db, tmp_path: Path) -> Cluster:
    load_fleet(ROOT / "examples" / "fleet.yaml")
    folder = tmp_path / "prod-eu-1"
    shutil.copytree(DEMO, folder)
    Cluster.objects.filter(name="prod-eu-1").update(connection=Cluster.Connection.MANIFESTS,
                                                    manifests_path=str(folder))
    return Cluster.objects.get(name="prod-eu-1")


def test_over_long_values_are_cut_to_their_columns_and_the_rest_is_stored(cluster):
    app = demo_application()
    app["metadata"]["name"] = "long-values"
    app["metadata"]["uid"] = "uid-long-values"
    app["spec"]["project"] = "p" * 300  # varchar(253)
    app["spec"]["source"]["targetRevision"] = "r" * 400  # varchar(253)
    app["spec"]["destination"]["server"] = "https://" + "s" * 600  # varchar(500)
    app.setdefault("status", {})["operationState"] = {"phase": "Running" * 10, "message": "m"}  # varchar(32)
    (Path(cluster.manifests_path) / "long-values.json").write_text(json.dumps(app))

    report = poll(cluster)

    assert report.ok, report.error
    stored = GitOpsApp.objects.get(read_from=cluster, name="long-values")
    assert stored.project == "p" * 253
    assert stored.target_revision == "r" * 253
    assert len(stored.destination_server) == 500
    assert stored.operation_phase == ("Running" * 10)[:32]
    assert GitOpsApp.objects.filter(read_from=cluster).count() > 1  # the others too
