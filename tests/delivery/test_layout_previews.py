"""The preview on real repository layouts, through the real forge clients against the forge fakes.

For every layout in tests/data/repo-layouts the fake forge holds the layout's files, the
application is stored as a poll stores it (the app object its LAYOUT.json names, with the
layout's repository URL pointing at the fake), and the change is built and previewed the way
the web preview does it (`change_forward` -> `preview_change` -> `forge_for` -> the client).
The lines the preview would change must be exactly the (file, line, before, after) that
tests/forges/layout_cases.py states for `forges.pins.tree_edits` — one table for both.
GitHub holds every layout; GitLab and Gitea a few of different kinds.

A layout whose app follows HEAD (or nothing) is served from a fake whose default branch is
`trunk`, so the preview must ask the forge rather than assume `main`.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from gitops.collectors.argocd import application_row
from gitops.derive.app_changes import plain
from gitops.git_locations import NAME, revision_kind
from portal.delivery.change_builders import change_for_chart_upgrade, change_for_upgrade
from portal.delivery.change_previews import preview_change
from portal.kernel.catalog.models import Service
from tests.fakes.forges.harness import serving
from tests.fixtures.seed import seed_app
from tests.forges.layout_cases import CHART_EXPECTED, EXPECTED, apps, layout, layout_files

pytestmark = pytest.mark.django_db

# A few layouts of different kinds for the other two forges: kustomize overlays and
# components, a multi-source `$values` app, a Flux HelmRelease's inline values in a base.
OTHER_FORGES = {
    "kustomize-components-env-promotion",
    "argocd-multi-source-bitnami-values",
    "flux-helmrelease-base-values",
}

CASES = [("github", *case) for case in EXPECTED] + [
    (kind, *case) for kind in ("gitlab", "gitea") for case in EXPECTED if case[0] in OTHER_FORGES
]


def pointed_at(value: Any, repo: str, url: str) -> tuple[Any, int]:
    """`value` with every clone URL of the GitHub repository `repo` replaced by `url`, and how many."""
    pattern = re.compile(rf"^(https://|git@)github\.com[/:]{re.escape(repo)}(\.git)?/?$", re.IGNORECASE)
    count = 0

    def walk(item: Any) -> Any:
        nonlocal count
        if isinstance(item, dict):
            return {key: walk(inner) for key, inner in item.items()}
        if isinstance(item, list):
            return [walk(inner) for inner in item]
        if isinstance(item, str) and pattern.match(item):
            count += 1
            return url
        return item

    return walk(copy.deepcopy(value)), count


def followed_revision(obj: dict[str, Any]) -> str:
    spec = obj.get("spec") or {}
    sources = spec.get("sources") or [spec.get("source") or {}]
    git = [s for s in sources if not s.get("chart")]
    return str((git[0] if git else {}).get("targetRevision") or "")


def stored_app(folder: str, catalog: Any, harness: Any, service: Service) -> Any:
    """The layout's application as a poll stores it, on prod-eu-1, its repository the fake."""
    facts = layout(folder)
    obj, replaced = pointed_at(apps()[folder], facts["source"]["repo"], harness.repository)
    running_tag = facts["running_tag"]
    if obj["kind"] == "Application":
        assert replaced, f"{folder}: the app names none of its repository's URLs"
        row = application_row(obj)
        primary = row.sources[0]
        return seed_app(
            catalog.prod_eu, row.name, service=service, version=running_tag, tool="argo",
            namespace=row.namespace or "argocd", repo_url=primary.repo_url, path=primary.path,
            chart=primary.chart, target_revision=primary.target_revision,
            sources=[plain(s) for s in row.sources], raw=row.raw,
        )
    name, namespace = obj["metadata"]["name"], obj["metadata"].get("namespace", "flux-system")
    if obj["kind"] == "Kustomization":
        return seed_app(
            catalog.prod_eu, name, service=service, version=running_tag, tool="flux", kind="Kustomization",
            namespace=namespace, repo_url=harness.repository, path=obj["spec"]["path"], target_revision="",
            raw=obj,
        )
    # A HelmRelease: its values live where the Kustomization its labels name applies it from.
    labels = obj["metadata"]["labels"]
    seed_app(
        catalog.prod_eu, labels["kustomize.toolkit.fluxcd.io/name"], tool="flux", kind="Kustomization",
        namespace=labels["kustomize.toolkit.fluxcd.io/namespace"], repo_url=harness.repository,
        path=facts["app_path"], target_revision="",
    )
    return seed_app(
        catalog.prod_eu, name, service=service, version=running_tag, tool="flux", kind="HelmRelease",
        namespace=namespace, repo_url="oci://ghcr.io/stefanprodan/charts/podinfo", path="",
        chart=facts.get("chart", {}).get("name", ""), target_revision="", raw=obj,
    )


def preview_lines(delivery: Any) -> list[tuple[str, int, str, str]]:
    assert delivery.preview is not None, delivery.error
    return [(edit.path, line.line, line.before, line.after) for edit in delivery.preview.edits for line in edit.lines]


@pytest.mark.parametrize(
    ("kind", "folder", "to_tag", "expected"), CASES, ids=[f"{case[0]}-{case[1]}" for case in CASES]
)
def test_the_preview_changes_exactly_the_lines_tree_edits_states(
    kind, folder, to_tag, expected, catalog, monkeypatch
):
    obj = apps()[folder]
    revision = followed_revision(obj)
    # A named branch is served as the fake's default branch; HEAD or nothing must find `trunk`.
    default_branch = revision if revision_kind(revision) == NAME else "trunk"
    facts = layout(folder)
    with serving(kind, monkeypatch, layout_files(folder), default_branch=default_branch) as harness:
        service = Service.objects.create(name="layout-app", image_repository=facts["image"])
        app = stored_app(folder, catalog, harness, service)

        delivery = preview_change(change_for_upgrade(app, service, to_tag))

        assert delivery.error == ""
        assert delivery.follows == "", delivery.follows
        assert delivery.change.base_branch == default_branch
        assert preview_lines(delivery) == [(e.path, e.line, e.before, e.after) for e in expected]
        if expected:
            assert delivery.can_open, delivery.problems
            # The edit is what will be committed: the file as read, with only those lines changed.
            for edit in delivery.preview.edits:
                assert edit.before == layout_files(folder)[edit.path]
        else:
            # Nothing to change: no button, and the preview says why.
            assert not delivery.can_open and delivery.problems
        # A preview only reads.
        assert {method for method, _path, _status in harness.server.log} == {"GET"}


def test_every_layout_is_previewed_on_github() -> None:
    assert sorted(case[1] for case in CASES if case[0] == "github") == sorted(apps())


# --- chart versions: the same lines as chart_edits, through the preview -------------------------


def with_chart_version(app: Any, facts: dict[str, Any]) -> None:
    """The chart version the poll reads for a HelmRelease whose chart comes by chartRef (the
    OCIRepository's ref, as gitops.collectors.flux stores it)."""
    if app.kind == "HelmRelease":
        chart = facts["chart"]
        app.target_revision = chart["version"]
        app.sources = [{"repo_url": app.repo_url, "chart": chart["name"], "target_revision": chart["version"],
                        "path": "", "ref": "OCIRepository/apps/podinfo-chart"}]
        app.save(update_fields=["target_revision", "sources"])


@pytest.mark.parametrize(
    ("kind", "folder", "to_version", "expected"),
    [("github", *case) for case in CHART_EXPECTED] + [("gitea", *CHART_EXPECTED[1])],
    ids=[f"github-{case[0]}" for case in CHART_EXPECTED] + [f"gitea-{CHART_EXPECTED[1][0]}"],
)
def test_a_chart_upgrade_preview_changes_exactly_the_lines_chart_edits_states(
    kind, folder, to_version, expected, catalog, monkeypatch
):
    revision = followed_revision(apps()[folder])
    default_branch = revision if revision_kind(revision) == NAME else "trunk"
    facts = layout(folder)
    with serving(kind, monkeypatch, layout_files(folder), default_branch=default_branch) as harness:
        service = Service.objects.create(name="layout-app", image_repository=facts["image"])
        app = stored_app(folder, catalog, harness, service)
        with_chart_version(app, facts)

        chart = facts["chart"]
        change = change_for_chart_upgrade(app, to_version, from_version=chart["version"], chart=chart["name"])
        delivery = preview_change(change)

        assert change.chart == facts["chart"]["name"] and change.services == ()
        assert delivery.error == "" and delivery.follows == ""
        assert preview_lines(delivery) == [(e.path, e.line, e.before, e.after) for e in expected]
        assert delivery.can_open, delivery.problems
        assert f"the {change.chart} chart to {to_version}" in delivery.preview.title
        assert delivery.preview.branch.startswith(f"portal/{change.chart}-chart-{to_version}")
        assert {method for method, _path, _status in harness.server.log} == {"GET"}
