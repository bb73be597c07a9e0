"""`pin_sources` for a batch answers what `pin_source` answers per application, and the
number of queries it makes does not grow with the batch.

Chart-only Argo CD Applications (a chart from a Helm repository, no Git source) are found in
the repository of their app-of-apps parent: named by the tracking annotation (Argo CD's own
live child Application from its controller test data), listed only in a parent's
`status.resources`, a parent that is itself chart-only (two levels), a tracking annotation
naming a parent the portal never read (the listing decides), and an orphan (no parent: why)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from django.db import connection
from django.test.utils import CaptureQueriesContext

from gitops.git_locations import PinSource, pin_source, pin_sources
from gitops.models import GitOpsApp
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db

LIVE_CHILD = Path("/work/shared/testdata/real-objects/argocd/argo-cd__live-child-application.yaml")
PLATFORM = "https://github.com/acme/platform.git"
HELM = "https://argoproj.github.io/argo-helm"


def live_child() -> dict:
    """The chart-only Application as Argo CD's controller test data holds it."""
    return yaml.safe_load(LIVE_CHILD.read_text())


def listing(*names: str, namespace: str = "argocd") -> dict:
    return {"status": {"resources": [
        {"group": "argoproj.io", "version": "v1alpha1", "kind": "Application", "namespace": namespace,
         "name": name, "status": "Synced", "health": {"status": "Healthy"}} for name in names]}}


def chart_child(cluster, name: str, *, tracking: str | None = None, labels: dict | None = None) -> GitOpsApp:
    raw = copy.deepcopy(live_child())
    raw["metadata"]["name"] = name
    if tracking is None:
        raw["metadata"].pop("annotations")
    else:
        raw["metadata"]["annotations"]["argocd.argoproj.io/tracking-id"] = tracking
    if labels:
        raw["metadata"]["labels"] = labels
    source = raw["spec"]["source"]
    return seed_app(cluster, name, raw=raw, repo_url=HELM, path="", chart=source["chart"],
                    target_revision=source["targetRevision"],
                    sources=[{"repo_url": HELM, "chart": source["chart"], "target_revision": source["targetRevision"],
                              "path": "", "ref": ""}])


def fleet(catalog, size: int) -> list[GitOpsApp]:
    """`size` groups of five chart-only children, each group with its own parents."""
    apps: list[GitOpsApp] = []
    for i in range(size):
        tracked, listed, nested, dangling, orphan = (
            f"workflows-{i}", f"listed-{i}", f"nested-{i}", f"dangling-{i}", f"orphan-{i}")
        root = seed_app(catalog.prod_eu, f"app-of-apps-{i}", repo_url=PLATFORM, path=f"argocd/apps-{i}",
                        target_revision="main", raw={"metadata": {"name": f"app-of-apps-{i}", "namespace": "argocd"},
                                                     **listing(listed, f"middle-{i}", dangling)})
        middle = chart_child(catalog.prod_eu, f"middle-{i}")
        middle.raw.update(listing(nested))
        middle.save(update_fields=["raw"])
        apps += [
            chart_child(catalog.prod_eu, tracked, tracking=f"{root.name}:argoproj.io/Application:argocd/{tracked}"),
            chart_child(catalog.prod_eu, listed),
            chart_child(catalog.prod_eu, nested),
            chart_child(catalog.prod_eu, dangling, tracking=f"never-read-{i}:argoproj.io/Application:argocd/x"),
            chart_child(catalog.prod_eu, orphan),
            middle,
            root,
        ]
    return apps


def fresh(apps: list[GitOpsApp]) -> list[GitOpsApp]:
    return list(GitOpsApp.objects.filter(pk__in=[a.pk for a in apps]).select_related("cluster").order_by("pk"))


def test_a_batch_answers_what_each_application_answers_alone(catalog):
    apps = fresh(fleet(catalog, 2))

    batch = pin_sources(apps)

    assert batch == {app.pk: pin_source(app) for app in apps}
    by_name = {app.name: batch[app.pk] for app in apps}
    for name in ("workflows-1", "listed-1", "nested-1", "dangling-1", "middle-1"):
        assert by_name[name] == PinSource(PLATFORM, "main", "argocd/apps-1", via="the Application "
                                          + ("middle-1" if name == "nested-1" else "app-of-apps-1")), name
    assert not by_name["orphan-1"].found
    assert "does not open pull requests on chart repositories" in by_name["orphan-1"].unknown


def test_a_tracking_annotation_beats_a_listing_and_the_first_listing_wins(catalog):
    first = seed_app(catalog.prod_eu, "first", repo_url=PLATFORM, path="argocd/first",
                     raw={"metadata": {"name": "first"}, **listing("cart")})
    seed_app(catalog.prod_eu, "second", repo_url=PLATFORM, path="argocd/second",
             raw={"metadata": {"name": "second"}, **listing("cart", namespace="")})
    seed_app(catalog.prod_us, "named", repo_url=PLATFORM, path="argocd/named", raw={"metadata": {"name": "named"}})
    cart = chart_child(catalog.prod_eu, "cart")
    labelled = chart_child(catalog.prod_eu, "labelled", labels={"app.kubernetes.io/instance": "named"})

    found = pin_sources(fresh([cart, labelled, first]))

    assert found[cart.pk].path == "argocd/first" and found[labelled.pk].path == "argocd/named"


def test_the_queries_do_not_grow_with_the_batch(catalog):
    small, large = fresh(fleet(catalog, 2)), None
    with CaptureQueriesContext(connection) as few:
        pin_sources(small)
    GitOpsApp.objects.all().delete()
    large = fresh(fleet(catalog, 12))
    with CaptureQueriesContext(connection) as many:
        pin_sources(large)

    assert len(large) == 6 * len(small)
    # Per level of app-of-apps: the named parents, the parents found; the listing scan once.
    assert len(many.captured_queries) == len(few.captured_queries) <= 7
    scans = [q["sql"] for q in many.captured_queries if "resources" in q["sql"]]
    assert len(scans) == 1
