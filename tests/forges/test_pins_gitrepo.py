"""forges.pins over a real git repository laid out like a GitOps repo."""

import os
import subprocess
from pathlib import Path

import pytest

from forges.pins import find, retag_with_reason, scan, unified_diff

LAYOUT = {
    "apps/checkout/base/kustomization.yaml": "resources:\n- deployment.yaml\n",
    "apps/checkout/base/deployment.yaml": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: checkout\nspec:\n  template:\n    spec:\n"
        "      containers:\n      - name: checkout\n        image: ghcr.io/acme/checkout:1.6.0\n"
        "      - name: proxy\n        image: envoyproxy/envoy:v1.30.1\n"
    ),
    "apps/checkout/overlays/staging/kustomization.yaml": (
        "resources:\n- ../../base\nimages:\n- name: ghcr.io/acme/checkout\n  newTag: 1.7.0 # promoted by CI\n"
    ),
    "apps/checkout/overlays/prod/kustomization.yaml": (
        'resources:\n- ../../base\nimages:\n- name: ghcr.io/acme/checkout\n  newTag: "1.6.0"\n'
    ),
    "apps/checkout/overlays/dev/kustomization.yaml": (
        "resources:\r\n- ../../base\r\nimages:\r\n- name: ghcr.io/acme/checkout\r\n"
        "  newName: ghcr.io/acme/checkout\r\n  newTag: 1.7.0-rc.1\r\n"
    ),
    "apps/checkout/chart/Chart.yaml": "apiVersion: v2\nname: checkout\nversion: 0.3.0\nappVersion: 1.6.0\n",
    "apps/checkout/chart/values.yaml": (
        "replicaCount: 2\nimage:\n  registry: ghcr.io\n  repository: acme/checkout\n  tag: 1.6.0\n"
    ),
    "apps/checkout/chart/templates/deployment.yaml": (
        'spec:\n  containers:\n  - image: "{{ .Values.image.registry }}/{{ .Values.image.repository }}:1.0.0"\n'
    ),
    "apps/checkout/nomad/checkout.nomad": (
        'job "checkout" {\n  group "web" {\n    task "checkout" {\n      driver = "docker"\n'
        '      config {\n        image = "ghcr.io/acme/checkout:1.6.0"\n      }\n    }\n  }\n}\n'
    ),
    "apps/other/deployment.yaml": "containers:\n- image: ghcr.io/acme/checkout:0.9.0\n",
    "README.md": "Run ghcr.io/acme/checkout:1.6.0\n",
}


def git(repo: Path, *args: str) -> str:
    return git_bytes(repo, *args).decode("utf-8")


def git_bytes(repo: Path, *args: str) -> bytes:
    # Bytes, not text mode: text mode would turn CRLF in a blob into LF.
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "test",
        "GIT_AUTHOR_EMAIL": "test@example.com",
        "GIT_COMMITTER_NAME": "test",
        "GIT_COMMITTER_EMAIL": "test@example.com",
    }
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "commit.gpgsign=false", *args],
        check=True,
        capture_output=True,
        env=env,
    )
    return done.stdout


def tree_at(repo: Path, revision: str, under: str) -> dict[str, str]:
    """path -> text for every blob under a directory, read from git objects, not the worktree."""
    names = git(repo, "ls-tree", "-r", "--name-only", revision, "--", under).splitlines()
    return {name: git(repo, "show", f"{revision}:{name}") for name in names}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "gitops"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for path, text in LAYOUT.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8", newline="")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial layout")
    return root


def test_find_over_the_application_path(repo):
    files = tree_at(repo, "main", "apps/checkout")
    assert "apps/other/deployment.yaml" not in files

    pins = find(files, "ghcr.io/acme/checkout")
    assert [(p.path, p.line, p.tag, p.kind) for p in pins] == [
        ("apps/checkout/base/deployment.yaml", 10, "1.6.0", "image"),
        ("apps/checkout/chart/values.yaml", 5, "1.6.0", "helm"),
        ("apps/checkout/nomad/checkout.nomad", 6, "1.6.0", "image"),
        ("apps/checkout/overlays/dev/kustomization.yaml", 6, "1.7.0-rc.1", "kustomize"),
        ("apps/checkout/overlays/prod/kustomization.yaml", 5, "1.6.0", "kustomize"),
        ("apps/checkout/overlays/staging/kustomization.yaml", 5, "1.7.0", "kustomize"),
    ]
    assert pins[-1].line_text == "  newTag: 1.7.0 # promoted by CI"
    assert [p.path for p in find(files, "ghcr.io/acme/checkout", "1.7.0")] == [
        "apps/checkout/overlays/staging/kustomization.yaml"
    ]
    assert sorted({(pin.image, pin.version) for pin in scan(files).pins}) == [
        ("docker.io/envoyproxy/envoy", "v1.30.1"),
        ("ghcr.io/acme/checkout", "1.6.0"),
        ("ghcr.io/acme/checkout", "1.7.0"),
        ("ghcr.io/acme/checkout", "1.7.0-rc.1"),
    ]
    assert scan(files).skipped == {}


def test_crlf_file_from_git_keeps_its_line_endings(repo):
    path = "apps/checkout/overlays/dev/kustomization.yaml"
    text = tree_at(repo, "main", "apps/checkout")[path]
    assert text.count("\r\n") == 6
    result = retag_with_reason(text, path, "ghcr.io/acme/checkout", "1.7.0-rc.1", "1.7.0")
    assert result.text == text.replace("newTag: 1.7.0-rc.1\r\n", "newTag: 1.7.0\r\n")


def test_promotion_edit_committed_matches_git_diff(repo):
    files = tree_at(repo, "main", "apps/checkout")
    path = "apps/checkout/overlays/prod/kustomization.yaml"
    result = retag_with_reason(files[path], path, "ghcr.io/acme/checkout", "1.6.0", "1.7.0")
    assert result.changed, result.reason

    git(repo, "checkout", "-q", "-b", "promote-checkout-1.7.0")
    (repo / path).write_text(result.text, encoding="utf-8", newline="")
    git(repo, "commit", "-q", "-am", "Promote checkout to 1.7.0")

    after = tree_at(repo, "promote-checkout-1.7.0", "apps/checkout")
    assert [p.path for p in find(after, "ghcr.io/acme/checkout", "1.6.0")] == [
        "apps/checkout/base/deployment.yaml",
        "apps/checkout/chart/values.yaml",
        "apps/checkout/nomad/checkout.nomad",
    ]
    changed = git(repo, "diff", "--name-only", "main", "promote-checkout-1.7.0").split()
    assert changed == [path]

    ours = unified_diff(path, files[path], after[path])
    theirs = git(repo, "diff", "main", "promote-checkout-1.7.0", "--", path)
    body = [line for line in theirs.splitlines() if line.startswith(("---", "+++", "-", "+", " "))]
    assert [line for line in ours.splitlines() if not line.startswith("@@")] == body
    assert '-  newTag: "1.6.0"' in ours and '+  newTag: "1.7.0"' in ours
