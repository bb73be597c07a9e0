"""Every forge reads a repository at a full commit SHA where it reads at a branch: a rollback reads
what Git pinned at a commit a GitOps tool's history names (portal.delivery.history_pins)."""

from __future__ import annotations

import pytest

from forges.forge import FileChange, NotFound, is_commit_sha
from tests.fakes.forges.harness import running

PATH = "apps/checkout/overlays/prod/kustomization.yaml"
BEFORE = "images:\n  - name: ghcr.io/acme/checkout\n    newTag: 1.6.0\n"
AFTER = "images:\n  - name: ghcr.io/acme/checkout\n    newTag: 1.7.0\n"


def test_a_commit_sha_is_told_from_a_branch_name():
    assert is_commit_sha("a" * 40) and is_commit_sha("0123456789abcdef" * 4)
    assert not is_commit_sha("main") and not is_commit_sha("a" * 39) and not is_commit_sha("A" * 40)
    assert not is_commit_sha("a" * 41)


@pytest.mark.parametrize("kind", ["github", "gitlab", "gitea"])
def test_the_tree_and_a_file_at_an_older_commit(kind):
    with running(kind, {PATH: BEFORE}) as harness:
        forge = harness.forge
        old = forge.branch_head("main")
        [blob] = [e.sha for e in forge.tree("", "main") if e.path == PATH]
        forge.commit_files("main", "checkout 1.7.0", [FileChange(PATH, AFTER, sha=blob)])
        assert forge.read_file(PATH, "main") == AFTER
        assert forge.branch_head(old) == old
        entries, files = forge.tree_files(old)
        assert PATH in [e.path for e in entries]
        assert files[PATH] == BEFORE


def test_the_demo_forge_reads_at_a_commit_and_refuses_an_unknown_one(tmp_path):
    from forges.demo import DemoForge, build_demo_repo

    repo = build_demo_repo(tmp_path / "r.git")
    forge = DemoForge.for_repository("https://github.com/acme-shop/gitops", repo)
    head = forge.branch_head("main")
    assert forge.branch_head(head) == head
    # A commit the demo clusters' histories name (examples/gitops-repo-history.yaml).
    assert 'newTag: "2.4.0"' in forge.read_file("apps/payments/overlays/staging/kustomization.yaml",
                                               "167c1719b3cf40b707e7e9ffe5328dcfdb86cdb8")
    with pytest.raises(NotFound, match="no branch or commit"):
        forge.branch_head("f" * 40)
