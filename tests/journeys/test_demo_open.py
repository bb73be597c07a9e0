"""The demo's offers opened for real, on the GitHub, GitLab and Gitea fakes holding the demo's
GitOps repository: for a sample of offers (a matrix line that groups clusters, an upgrade on
Updates, a promotion on Delivery, a chart upgrade, a rollback from a tool's history), the pull
request opened has the branch the preview named, changes exactly the files and lines the
preview showed, and carries its title and description. The fakes speak each forge's own API
(tests/fakes/forges)."""

from __future__ import annotations

import html
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.http import QueryDict

from portal.delivery.change_previews import open_change, preview_change
from portal.delivery.models import PullRequest
from portal.web.views.pr import build_changes, parse_items, pull_requests_for
from tests.fakes.forges.harness import KINDS, running

pytestmark = pytest.mark.django_db

DEMO_REPOSITORY = Path(__file__).resolve().parents[2] / "examples" / "gitops-repo"
_OFFER = re.compile(r'href="(/pr/preview\?[^"]*)"')


def demo_files() -> dict[str, str]:
    return {str(p.relative_to(DEMO_REPOSITORY)): p.read_text() for p in DEMO_REPOSITORY.rglob("*") if p.is_file()}


def sample_offers(client) -> list[str]:
    """One offer of each shape the pages show."""
    def offers(path: str) -> list[str]:
        return [html.unescape(u) for u in _OFFER.findall(client.get(path).content.decode())]

    matrix, updates, delivery = offers("/matrix"), offers("/updates"), offers("/delivery")
    panel = offers("/services/payments")
    picked = [
        next(u for u in matrix if u.count("item=") > 1),  # a line grouping several clusters
        next(u for u in updates if "kind=upgrade" in u and "chart%3D" not in u and "chart=" not in u),
        next(u for u in delivery if "kind=promotion" in u and "chart" not in u),
        next(u for u in updates if "chart=" in u or "chart%3D" in u),
        next(u for u in panel if "kind=rollback" in u),  # payments-staging, from Argo CD's history
    ]
    return list(dict.fromkeys(picked))


def test_sampled_demo_offers_open_the_pull_request_their_preview_shows(demo, client, member, settings):
    urls = sample_offers(client)
    settings.DEMO_MODE = False  # the demo forge refuses writes; these go to the fake
    for kind in KINDS:  # one demo for the three forges: it is the slow part
        PullRequest.objects.all().delete()  # each forge opens them anew
        open_on(kind, urls, member)
    assert len(urls) == 5


def open_on(kind: str, urls: list[str], member: object) -> None:
    with running(kind, demo_files()) as harness:
        for url in urls:
            requested, items, mode = parse_items(QueryDict(urlsplit(url).query))
            for group in pull_requests_for(build_changes(requested, items).changes, mode):
                shown = preview_change(group, forge=harness.forge)
                assert shown.can_open, (url, shown.error, shown.problems)
                before = harness.model.files_at("main")
                result = open_change(group, member, forge=harness.new_forge())
                assert result.ok, (url, result.message)

                preview = shown.preview
                assert preview is not None
                assert preview.branch in harness.model.branches, (url, sorted(harness.model.branches))
                after = harness.model.files_at(preview.branch)
                changed = {path for path in after if after[path] != before.get(path)}
                assert changed == {edit.path for edit in preview.edits}, url
                for edit in preview.edits:
                    assert after[edit.path] == edit.after, (url, edit.path)
                [pull] = [p for p in harness.model.pulls if p.head == preview.branch]
                assert (pull.base, pull.title) == ("main", preview.title)
                assert "**What**" in pull.body and preview.title.split(" ")[0].lower() in pull.body.lower()
                assert all(edit.path in pull.body for edit in preview.edits)
