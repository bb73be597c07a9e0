"""Every application of the demo (examples/clusters) over the demo's Git repository
(examples/gitops-repo): the Git pins name one version per service, the one the build renders,
and an upgrade from it plans a clean edit.

This is the walk a person takes through pins on `make run`'s demo, without the pages: for each
Argo CD Application and Flux object that builds from the repository, the pins it holds
(`portal.delivery.current_pins.service_pins` over `forges.pins.layouts.tree.tree_reads`, as a pin read
stores them), then `forges.pins.tree_edit_result` from that version. The prod-ap overlays
point each service at a registry mirror (`images: - name: ghcr.io/acme-shop/<service>,
newName: asia-southeast1-docker.pkg.dev/acme-shop/mirror/<service>, newTag: …`) over a base
at `:latest`; their pins are the overlay's, not "3.3.0, latest".
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml

from forges.pins.layouts.tree import tree_edit_result, tree_reads
from portal.delivery.current_pins import service_pins
from portal.kernel.catalog.models import Service, service_image_index

ROOT = Path(__file__).parents[2] / "examples"
REPOSITORY = "https://github.com/acme-shop/gitops.git"
NEW = "99.0.0"


def demo_files() -> dict[str, str]:
    source = ROOT / "gitops-repo"
    return {p.relative_to(source).as_posix(): p.read_text() for p in sorted(source.rglob("*")) if p.is_file()}


def services() -> dict[str, Service]:
    fleet = yaml.safe_load((ROOT / "fleet.yaml").read_text())
    return {
        entry["name"]: Service(
            name=entry["name"], image_repository=entry["image"], image_aliases=entry.get("aliases", [])
        )
        for entry in fleet["services"]
    }


def demo_apps() -> list[tuple[str, dict[str, Any]]]:
    """(cluster/name, object) of every Argo CD Application with a path in the repository and
    every Flux Kustomization and HelmRelease of the demo's clusters."""
    found = []
    for path in sorted((ROOT / "clusters").rglob("*.yaml")):
        for document in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader):  # libyaml: read at collection
            if not isinstance(document, dict):
                continue
            kind, spec = document.get("kind"), document.get("spec") or {}
            name = f"{path.relative_to(ROOT / 'clusters').parts[0]}/{document['metadata']['name']}"
            if kind == "Application":
                sources = spec.get("sources") or [spec.get("source") or {}]
                if any(s.get("repoURL") == REPOSITORY and s.get("path") for s in sources):
                    found.append((name, document))
            elif kind == "Kustomization" and str(spec.get("path", "")).startswith("./apps/"):
                found.append((name, document))
            elif kind == "HelmRelease":
                found.append((name, document))
    return found


APPS = demo_apps()


def held_versions(files: dict[str, str], app: dict[str, Any]) -> dict[str, set[str]]:
    reads = tree_reads(files, app, repository=REPOSITORY if app["kind"] == "Application" else None)
    own = {path: files[path] for path in reads.paths}
    found: dict[str, set[str]] = defaultdict(set)
    for service, pin in service_pins(own, reads, service_image_index(list(services().values()))):
        found[service].add(pin.version)
    return found


def test_the_walk_covers_the_prod_ap_mirrors_and_every_tool() -> None:
    names = {name for name, _ in APPS}
    assert {"prod-ap-1/checkout-prod", "prod-ap-1/auth-prod", "prod-us-1/orders", "dev-eu-1/notifications"} <= names
    assert {app["kind"] for _, app in APPS} == {"Application", "Kustomization", "HelmRelease"}


def test_prod_ap_pins_the_overlays_mirror_tag_not_the_bases_latest() -> None:
    files = demo_files()
    app = dict(APPS)["prod-ap-1/checkout-prod"]
    assert held_versions(files, app) == {"checkout": {"3.3.0"}}
    result = tree_edit_result(files, app, "ghcr.io/acme-shop/checkout", "3.3.0", "3.4.1")
    assert result.reasons == []
    assert [(e.path, e.line, e.before, e.after) for e in result.edits] == [
        ("apps/checkout/overlays/prod-ap/kustomization.yaml", 12, '    newTag: "3.3.0"', '    newTag: "3.4.1"')
    ]


@pytest.mark.parametrize(("name", "app"), APPS, ids=[name for name, _ in APPS])
def test_each_pin_is_one_version_and_its_upgrade_is_a_clean_edit(name: str, app: dict[str, Any]) -> None:
    files = demo_files()
    held = held_versions(files, app)
    reads = tree_reads(files, app)
    for service, versions in held.items():
        assert len(versions) == 1, f"{name}: Git pins {service} at {sorted(versions)}"
        (version,) = versions
        image = services()[service].image_repository
        result = tree_edit_result(files, app, image, version, NEW)
        assert result.edits, f"{name}: {service} {version} -> {NEW}: {result.reasons}"
        assert [r for r in result.reasons if image in r] == []
        for edit in result.edits:
            assert NEW in edit.after and version in edit.before, edit
            where = f"{edit.path}:{edit.line}"
            assert reads.holds(edit.path, edit.line), f"{name}: edits {where}, which the build overrides"


# --- the same, through the portal: the demo as `make run` loads it, its pin read and preview ---


@pytest.fixture
def loaded_demo(settings, tmp_path: Path) -> None:
    from django.core.management import call_command

    from forges.demo import build_demo_repo

    settings.DEMO_MODE = True
    settings.VAR_DIR = tmp_path
    build_demo_repo(tmp_path / "demo-gitops.git")
    call_command("load_demo", verbosity=0)


@pytest.mark.django_db
def test_prod_ap_checkout_pins_and_previews_the_mirror_overlay(loaded_demo: None) -> None:
    from gitops.models import GitOpsApp
    from portal.delivery.change_builders import change_for_upgrade
    from portal.delivery.change_previews import preview_change
    from portal.delivery.current_pins import git_pins, read_app_pins

    app = GitOpsApp.objects.get(cluster__name="prod-ap-1", name="checkout-prod")
    service = Service.objects.get(name="checkout")

    report = read_app_pins(app)

    assert report.ok, report.error
    overlay = "apps/checkout/overlays/prod-ap/kustomization.yaml"
    assert git_pins(app) == [{"service": "checkout", "version": "3.3.0", "path": overlay, "line": 12}]
    delivery = preview_change(change_for_upgrade(app, service, "3.4.1"))
    assert delivery.error == "" and delivery.preview is not None
    assert [(e.path, [(c.line, c.before, c.after) for c in e.lines]) for e in delivery.preview.edits] == [
        (overlay, [(12, '    newTag: "3.3.0"', '    newTag: "3.4.1"')])
    ]
