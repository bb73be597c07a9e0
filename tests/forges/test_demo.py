"""Demo mode: a local Git repository built from examples/gitops-repo feeds real previews; writes are refused."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from forges.demo import DEMO_SOURCE, DemoForge, build_demo_repo
from forges.forge import NotFound, WritesRefused
from forges.hosts import forge_for
from portal.delivery.models import PullRequest
from portal.delivery.planner import Change, plan
from portal.delivery.pull_requests import DEMO_REFUSAL, REFUSED, open_planned
from portal.kernel.audit.models import AuditLog

CATALOG_PROD = "apps/catalog/overlays/prod/kustomization.yaml"


def commits(repo: Path) -> list[str]:
    out = subprocess.run(["git", "--git-dir", str(repo), "rev-list", "main"], capture_output=True, check=True)
    return out.stdout.decode().split()


@pytest.fixture
def demo_repo(tmp_path: Path) -> Path:
    return build_demo_repo(tmp_path / "demo-gitops.git")


def test_the_demo_repository_holds_the_example_files_and_is_built_once(demo_repo: Path) -> None:
    forge = DemoForge.for_repository("https://github.com/acme-shop/gitops", demo_repo)

    assert forge.read_file(CATALOG_PROD, "main") == (DEMO_SOURCE / CATALOG_PROD).read_text()
    paths = {e.path for e in forge.tree("apps/catalog", "main")}
    assert CATALOG_PROD in paths and all(p.startswith("apps/catalog/") for p in paths)
    build_demo_repo(demo_repo)
    assert len(commits(demo_repo)) == 1
    with pytest.raises(NotFound):
        forge.branch_head("--output=/tmp/x")


def test_a_preview_works_in_demo_mode_and_opening_is_refused(demo_repo: Path, db: None, settings: object) -> None:
    settings.DEMO_MODE = True
    settings.VAR_DIR = demo_repo.parent
    forge = forge_for("https://github.com/acme-shop/gitops")
    assert isinstance(forge, DemoForge)
    text = (DEMO_SOURCE / CATALOG_PROD).read_text()
    current = text.split('newTag: "', 1)[1].split('"', 1)[0]
    change = Change(
        kind="upgrade",
        services=("catalog",),
        environment="prod",
        repository="https://github.com/acme-shop/gitops",
        base_branch="main",
        path="apps/catalog/overlays/prod",
        image="ghcr.io/acme-shop/catalog",
        from_version=current,
        to_version="9.9.9",
    )

    result = plan(change, *forge.pin_files(change.path, change.base_branch))

    assert [e.path for e in result.edits] == [CATALOG_PROD]
    assert 'newTag: "9.9.9"' in result.edits[0].after
    opened = open_planned(forge, result)
    assert (opened.status, opened.message) == (REFUSED, DEMO_REFUSAL)
    assert not PullRequest.objects.exists()
    assert AuditLog.objects.filter(action="pull_request.refused").count() == 1
    with pytest.raises(WritesRefused):
        forge.create_branch("portal/x", "main")
