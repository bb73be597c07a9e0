"""A preview of a commit already read reads no tree and no file again, on each forge's fake over
real HTTP, through the page a person opens: the branch's head is asked (one call), and the tree
and texts of that commit come from forges.treecache. A new commit on the branch is read again,
its unchanged files not; with the cache off (PORTAL_FORGE_TREE_CACHE_BYTES=0) every preview
reads everything, as before. The page's own kept result (portal.delivery.preview_jobs) is dropped
before each page here, so every page runs the task's reads, which is what these tests look at."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.urls import reverse

from portal.delivery.models import PreviewResult
from tests.fakes.forges.harness import KINDS, serving
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db

PROD = "apps/checkout/overlays/prod"
# What each forge's API path says a request reads.
TREE = {"github": "/git/trees/", "gitlab": "/repository/tree", "gitea": "/git/trees/"}
FILE = {"github": "/contents/", "gitlab": "/repository/files/", "gitea": "/contents/"}
HEAD = {"github": "/branches/", "gitlab": "/repository/branches/", "gitea": "/branches/"}


@pytest.fixture(params=KINDS)
def forge(request, monkeypatch):
    with serving(request.param, monkeypatch) as harness:
        yield harness


@pytest.fixture
def url(catalog, forge) -> str:
    app = seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0",
                   repo_url=forge.repository, path=PROD)
    return reverse("pr-preview") + "?" + urlencode({"kind": "upgrade", "service": "checkout", "app": app.pk,
                                                    "to": "1.7.0"})


def reads(forge, what: dict[str, str]) -> list[str]:
    return [path for method, path, _status in forge.server.log if method == "GET" and what[forge.kind] in path]


def preview(client, url: str) -> str:
    PreviewResult.objects.all().delete()
    response = client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    assert '+    newTag: &quot;1.7.0&quot; # bumped by the portal' in html
    return html


def test_a_second_preview_of_the_same_commit_reads_no_tree_and_no_file(eager_celery, client, users, forge, url):
    client.force_login(users["viewer"])
    first = preview(client, url)
    trees, files, heads = len(reads(forge, TREE)), len(reads(forge, FILE)), len(reads(forge, HEAD))
    assert trees >= 1 and files >= 2 and heads >= 1

    second = preview(client, url)
    assert len(reads(forge, TREE)) == trees, "the tree of a commit read before is not read again"
    assert len(reads(forge, FILE)) == files, "nor are its files"
    assert len(reads(forge, HEAD)) > heads, "the branch's head is asked every time"
    assert second.split("<h1>", 1)[1] == first.split("<h1>", 1)[1], "the same preview"


def test_a_new_commit_is_read_again_and_only_its_changed_files(eager_celery, client, users, forge, url):
    client.force_login(users["viewer"])
    preview(client, url)
    trees, files = len(reads(forge, TREE)), reads(forge, FILE)

    model = forge.model
    changed = f"{PROD}/values.yaml"
    tree = dict(model.commits[model.branches["main"]].files)
    text = "replicaCount: 5\nimage:\n  repository: ghcr.io/acme/checkout\n  tag: 1.6.0\n"
    tree[changed] = ("100644", model.put_blob(text.encode()))
    model.branches["main"] = model.commit(tree, [model.branches["main"]], "five replicas")

    preview(client, url)
    assert len(reads(forge, TREE)) > trees, "a new head: its tree is read"
    new_files = reads(forge, FILE)[len(files):]
    assert len(new_files) == 1 and "values.yaml" in new_files[0], new_files


def test_with_the_cache_off_every_preview_reads_everything(eager_celery, client, users, forge, url, settings):
    settings.PORTAL_FORGE_TREE_CACHE_BYTES = 0
    client.force_login(users["viewer"])
    preview(client, url)
    trees, files = len(reads(forge, TREE)), len(reads(forge, FILE))
    preview(client, url)
    assert len(reads(forge, TREE)) == 2 * trees and len(reads(forge, FILE)) == 2 * files
