"""The demo forge: the read side of `Forge` over a local Git repository.

`make run` has no forge and no token, yet previews should show real diffs. So the
demo GitOps repository (examples/gitops-repo) is committed into a bare repository
(var/demo-gitops.git) and read with `git` itself. Every write is refused: demo mode
never pretends to open a pull request.

The demo clusters' histories (Argo CD's `status.history`, Flux's) name commits from before the
one the demo repository holds; a rollback reads what Git pinned at them. They are listed in
examples/gitops-repo-history.yaml as edits of gitops-repo/, and `build_demo_repo` commits each
under `refs/demo-history/<the commit the clusters name>`: a commit SHA not in the repository is
looked up there (commit SHAs cannot be chosen, so the demo's names are kept beside them).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import yaml
from django.conf import settings

from forges.forge import (
    MAX_RELEASES,
    NONE,
    FileChange,
    Forge,
    NotFound,
    Outcome,
    PullRequestInfo,
    ReleaseInfo,
    TreeEntry,
    WritesRefused,
    is_commit_sha,
)
from forges.repourls import GITHUB, RepoRef, parse_repo_url

ROOT = Path(__file__).resolve().parent.parent
DEMO_SOURCE = ROOT / "examples" / "gitops-repo"
DEMO_HISTORY = ROOT / "examples" / "gitops-repo-history.yaml"
HISTORY_REFS = "refs/demo-history/"
DEMO_BRANCH = "main"
REFUSAL = "Demo mode does not write to Git: the portal only shows the preview of this pull request."
_GIT_TIMEOUT = 30


def demo_repo_path() -> Path:
    from django.conf import settings

    return Path(getattr(settings, "VAR_DIR", ROOT / "var")) / "demo-gitops.git"


def build_demo_repo(
    target: Path | None = None, source: Path = DEMO_SOURCE, branch: str = DEMO_BRANCH, history: Path | None = None
) -> Path:
    """Commit `source` into the bare repository `target` (created when missing), and the earlier
    commits `history` lists (examples/gitops-repo-history.yaml for the demo's own `source`) under
    HISTORY_REFS; idempotent."""
    target = Path(target) if target is not None else demo_repo_path()
    if not (target / "HEAD").exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        _git(target.parent, "init", "--quiet", "--bare", f"--initial-branch={branch}", str(target))
    if history is None and source == DEMO_SOURCE:
        history = DEMO_HISTORY
    if history is not None:
        _build_history(target, source, history)
    # The index lives in the bare repository; the files are read from `source` in place.
    tree_args = ["--git-dir", str(target), "--work-tree", str(source)]
    _git(source, *tree_args, "add", "--all", ".")
    has_head = _git_ok(source, *tree_args, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")
    if has_head and _git_ok(source, *tree_args, "diff", "--cached", "--quiet", f"refs/heads/{branch}"):
        return target
    _git(source, *tree_args, "commit", "--quiet", "--no-verify", "-m", "Demo GitOps repository")
    return target


def _build_history(target: Path, source: Path, history: Path) -> None:
    """Commit each entry of `history` (oldest first: `commit`, `message`, `edits` {path: [old,
    new]}) as `source` with its edits, under HISTORY_REFS + its `commit`, each the parent of the
    next; the ones already there are kept. An edit that no longer applies is an error: the
    history file must follow gitops-repo/."""
    entries = yaml.safe_load(history.read_text()) or []
    if all(_git_ok(target, "rev-parse", "--verify", "--quiet", f"{HISTORY_REFS}{e['commit']}") for e in entries):
        return
    parent = ""
    with tempfile.TemporaryDirectory() as scratch:
        index = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}  # the main branch's index is left alone
        for number, entry in enumerate(entries):
            tree_dir = Path(scratch) / f"tree-{number}"
            shutil.copytree(source, tree_dir)
            for path, (old, new) in (entry.get("edits") or {}).items():
                file = tree_dir / path
                text = file.read_text()
                if old not in text:
                    raise RuntimeError(f"{history.name}: {path} holds no {old!r}: the history no longer follows it")
                file.write_text(text.replace(old, new, 1))
            tree_args = ["--git-dir", str(target), "--work-tree", str(tree_dir)]
            _git(tree_dir, *tree_args, "add", "--all", ".", env=index)
            tree = _git(tree_dir, *tree_args, "write-tree", env=index).decode().strip()
            parents = ["-p", parent] if parent else []
            parent = _git(target, "commit-tree", tree, *parents, "-m", str(entry["message"])).decode().strip()
            _git(target, "update-ref", f"{HISTORY_REFS}{entry['commit']}", parent)


class DemoForge(Forge):
    kind = "demo"

    def __init__(self, path: Path, repo: RepoRef) -> None:
        self.path = Path(path)
        self.repo = repo

    @classmethod
    def for_repository(cls, repository: str, path: Path | None = None) -> DemoForge:
        path = path or demo_repo_path()
        if not (path / "HEAD").exists():
            build_demo_repo(path)
        ref = parse_repo_url(repository) or RepoRef("demo.local", "demo", "gitops", GITHUB, "https://demo.local")
        return cls(path, ref)

    # --- reading ---------------------------------------------------------------------

    def read_default_branch(self) -> str:
        # The bare repository's HEAD names the branch `build_demo_repo` committed to.
        done = _run(self.path, "symbolic-ref", "--short", "HEAD")
        return done.stdout.decode().strip() if done.returncode == 0 else DEMO_BRANCH

    def branch_head(self, branch: str) -> str:
        _check_name(branch)
        ref = branch if is_commit_sha(branch) else f"refs/heads/{branch}"
        done = _run(self.path, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
        if done.returncode != 0 and is_commit_sha(branch):
            # A commit the demo clusters' histories name (see the module docstring).
            done = _run(self.path, "rev-parse", "--verify", "--quiet", f"{HISTORY_REFS}{branch}^{{commit}}")
        if done.returncode != 0:
            raise NotFound(f"demo repository: no branch or commit {branch}", 404)
        return done.stdout.decode().strip()

    def tree(self, path: str, branch: str) -> list[TreeEntry]:
        return self._tree_at(self.branch_head(branch), path)

    def commit_tree(self, commit: str) -> list[TreeEntry]:
        return self._tree_at(self._commit(commit), "")

    def _commit(self, ref: str) -> str:
        """The commit a branch or a commit SHA names here: a SHA the demo clusters' histories name
        is filed under HISTORY_REFS (`branch_head`), so it is looked up, never read as it is."""
        return self.branch_head(ref)

    def _tree_at(self, head: str, path: str) -> list[TreeEntry]:
        args = ["ls-tree", "-r", "-l", "-z", head]
        if path.strip("/"):
            args += ["--", path.strip("/")]
        output = _git(self.path, *args)
        entries = []
        for record in output.split(b"\0"):
            if not record:
                continue
            meta, _, name = record.partition(b"\t")
            mode, kind, sha, size = meta.decode().split()
            if kind == "blob":
                entries.append(TreeEntry(name.decode("utf-8"), sha, mode, int(size) if size.isdigit() else None))
        return entries

    def read_file(self, path: str, branch: str) -> str:
        head = self._commit(branch)
        done = _run(self.path, "cat-file", "blob", f"{head}:{path}")
        if done.returncode != 0:
            raise NotFound(f"demo repository: no file {path} on {branch}", 404)
        return done.stdout.decode("utf-8")

    def open_pull_requests(self) -> list[PullRequestInfo]:
        return []

    def pull_request(self, number: int) -> PullRequestInfo:
        raise NotFound(f"demo repository: no pull request #{number}", 404)

    def checks(self, pr: PullRequestInfo) -> str:
        return NONE

    def releases(self, limit: int = MAX_RELEASES) -> list[ReleaseInfo]:
        # The demo has one local repository, the GitOps one; no application's code lives there,
        # so there are no release notes to show (never invented ones).
        return []

    # --- writing: refused ------------------------------------------------------------

    def create_branch(self, branch: str, from_branch: str) -> str:
        raise WritesRefused(REFUSAL)

    def delete_branch(self, branch: str) -> None:
        raise WritesRefused(REFUSAL)

    def commit_files(self, branch: str, message: str, changes: list[FileChange]) -> str:
        raise WritesRefused(REFUSAL)

    def open_pull_request(self, head: str, base: str, title: str, body: str) -> PullRequestInfo:
        raise WritesRefused(REFUSAL)

    def request_reviewers(self, number: int, reviewers: list[str]) -> Outcome:
        raise WritesRefused(REFUSAL)

    def add_labels(self, number: int, labels: list[str]) -> Outcome:
        raise WritesRefused(REFUSAL)

    def create_comment(self, number: int, body: str) -> str:
        raise WritesRefused(REFUSAL)

    def update_comment(self, number: int, comment_id: str, body: str) -> None:
        raise WritesRefused(REFUSAL)


def _check_name(branch: str) -> None:
    # A name starting with "-" would be read by git as an option.
    if not branch or branch.startswith("-") or any(c in branch for c in " ~^:?*[\\\0"):
        raise NotFound(f"demo repository: no branch {branch!r}", 404)


def _env() -> dict[str, str]:
    # Fixed identity and no user/system config, so the demo commit is the same everywhere.
    return {
        **settings.PORTAL_CHILD_PROCESS_ENVIRONMENT(),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "GitOps portal demo",
        "GIT_AUTHOR_EMAIL": "demo@portal.invalid",
        "GIT_COMMITTER_NAME": "GitOps portal demo",
        "GIT_COMMITTER_EMAIL": "demo@portal.invalid",
    }


def _run(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["git", "-c", "commit.gpgsign=false", *(["--git-dir", str(cwd)] if (cwd / "HEAD").exists() else []), *args],
        cwd=cwd,
        capture_output=True,
        env={**_env(), **(env or {})},
        timeout=_GIT_TIMEOUT,
        check=False,
    )


def _git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> bytes:
    done = _run(cwd, *args, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"git {args[0]} failed: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def _git_ok(cwd: Path, *args: str) -> bool:
    return _run(cwd, *args).returncode == 0
