"""Reach end to end: a change to a HelmRelease base shared by two clusters' `apps` Kustomizations.

flux-helmrelease-base-values sets redis's tag in apps/base/podinfo/release.yaml, which both
apps/production and apps/staging build: upgrading redis for production edits that line, so the
change reaches staging too, another environment. The preview (object, page and PR body), the
opened pull request's row, the API's detail and list, and the MCP tool must all say so; the pure
parts (which lines move what an app renders, what lies beyond the target, which files a grouped
change shares) are checked on their own below.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from forges.pins.layouts.app_reads import Reads
from portal.api.mcp import tools
from portal.api.mcp.api_pages import Caller
from portal.delivery.change_builders import change_for_upgrade
from portal.delivery.change_previews import open_change, preview_change
from portal.delivery.current_pins import read_pins
from portal.delivery.models import GitPinRead, PullRequest
from portal.delivery.planner import UPGRADE, Change, MovedLine
from portal.delivery.reach import Candidate, Target, beyond_target, reached_by, shared_files, versions_after
from portal.kernel.accounts import tokens
from portal.kernel.catalog.models import Service
from tests.delivery.test_layout_reach import CASES, stored
from tests.fakes.forges.harness import serving
from tests.forges.layout_cases import layout, layout_files

pytestmark = pytest.mark.django_db

FOLDER = "flux-helmrelease-base-values"
BASE = "apps/base/podinfo/release.yaml"


@pytest.fixture
def fleet(catalog, monkeypatch):
    """The layout on the GitHub fake, its three Kustomizations stored and their pins read."""
    case = next(case for case in CASES if case.folder == FOLDER)
    facts = layout(FOLDER)
    with serving("github", monkeypatch, layout_files(FOLDER), default_branch="trunk") as harness:
        service = Service.objects.create(name="redis", image_repository=facts["image"])
        rows = [stored(app, FOLDER, catalog, harness.repository, service) for app in case.apps]
        assert all(report.ok for report in read_pins(rows).values())
        production = next(row for row in rows if row.cluster == catalog.prod_eu and row.name == "apps")
        yield harness, service, production


def test_the_preview_says_the_base_edit_reaches_staging_with_a_warning(fleet):
    harness, service, production = fleet
    delivery = preview_change(change_for_upgrade(production, service, "8.6.3"))

    assert delivery.error == "" and delivery.preview is not None
    assert [(m.path, m.line, m.to_version) for m in delivery.preview.moved] == [(BASE, 27, "8.6.3")]
    reach = delivery.reach
    assert reach is not None
    assert [(env.name, [(c.name, [a.app for a in c.apps]) for c in env.clusters]) for env in reach.environments] == [
        ("staging", [("staging-eu-1", ["apps"])]),
        ("prod", [("prod-eu-1", ["apps"])]),
    ]
    by_cluster = {app.cluster: app for app in reach.reached}
    assert [(v.subject, v.before, v.after) for v in by_cluster["prod-eu-1"].versions] == [("redis", "8.6.2", "8.6.3")]
    assert [(v.subject, v.before, v.after) for v in by_cluster["staging-eu-1"].versions] == [
        ("redis", "8.6.2", "8.6.3")]
    assert by_cluster["prod-eu-1"].beyond == ""
    assert by_cluster["staging-eu-1"].beyond == "another environment (staging, not prod)"
    assert reach.warnings == [
        f"This change also reaches apps on staging-eu-1, another environment (staging, not prod): it builds {BASE}."
    ]
    description = delivery.preview.description
    assert "**Reach**" in description
    assert "- `staging` / `staging-eu-1` / `apps`: redis `8.6.2` → `8.6.3` — **beyond the target**" in description
    assert description.index("**Reach**") < description.index("Opened by the GitOps portal")


def test_the_preview_page_shows_the_reach_above_the_diff(fleet, client, users, eager_celery):
    harness, service, production = fleet
    client.force_login(users["viewer"])
    page = client.get(reverse("pr-preview"), {"kind": "upgrade", "item": f"{production.pk}:redis:8.6.3"})

    html = page.content.decode()
    assert page.status_code == 200
    assert html.index('class="reach"') < html.index("Files and changed lines")
    assert 'data-cluster="staging-eu-1"' in html and 'data-cluster="prod-eu-1"' in html
    assert 'class="warnings reach-warnings"' in html
    assert "This change also reaches apps on staging-eu-1, another environment (staging, not prod)" in html


def test_the_opened_pull_request_keeps_its_reach_for_the_api_and_mcp(fleet, users, client):
    harness, service, production = fleet
    result = open_change(change_for_upgrade(production, service, "8.6.3"), users["member"], forge=harness.forge)
    assert result.ok, result.message
    [pull] = harness.model.open_pulls()
    assert "**Reach**" in pull.body and "beyond the target" in pull.body
    row = PullRequest.objects.get()
    _, plain = tokens.issue(users["viewer"], "tests")

    detail = client.get(f"/api/v1/pull-requests/{row.pk}", HTTP_AUTHORIZATION=f"Bearer {plain}").json()
    listed = client.get("/api/v1/pull-requests", HTTP_AUTHORIZATION=f"Bearer {plain}").json()["results"]
    assert detail["id"] == row.pk and listed[0]["reach"] == detail["reach"]
    reach = detail["reach"]
    assert [e["name"] for e in reach["environments"]] == ["staging", "prod"]
    staging = reach["environments"][0]["clusters"][0]
    assert staging["name"] == "staging-eu-1"
    assert staging["applications"] == [{"name": "apps", "files": [BASE], "beyond_target": "another environment "
                                        "(staging, not prod)", "versions": [{"subject": "redis", "before": "8.6.2",
                                                                             "after": "8.6.3"}]}]
    assert len(reach["warnings"]) == 1 and reach["shared_files"] == [] and reach["not_read"] == []
    assert client.get("/api/v1/pull-requests/999999", HTTP_AUTHORIZATION=f"Bearer {plain}").status_code == 404

    answer = tools.pull_requests(Caller(plain, host="testserver"), {})
    assert answer["pull_requests"][0]["reach"] == reach


def test_the_mcp_preview_tool_says_the_reach_before_opening(fleet, users):
    harness, service, production = fleet
    _, plain = tokens.issue(users["viewer"], "tests")
    [preview] = tools.preview_pull_request(Caller(plain, host="testserver"), "upgrade",
                                           [f"{production.pk}:redis:8.6.3"])["pull_requests"]
    assert [c["name"] for e in preview["reach"]["environments"] for c in e["clusters"]] == [
        "staging-eu-1", "prod-eu-1"]
    assert preview["reach"]["warnings"] == [
        f"This change also reaches apps on staging-eu-1, another environment (staging, not prod): it builds {BASE}."
    ]


def test_an_app_whose_build_was_never_kept_is_named_not_read(fleet):
    harness, service, production = fleet
    GitPinRead.objects.filter(app=production).update(builds=None)
    reach = preview_change(change_for_upgrade(production, service, "8.6.3")).reach
    assert reach is not None
    assert [app.cluster for app in reach.reached] == ["staging-eu-1"]
    assert reach.unread == ["apps on prod-eu-1"]


# --- the pure parts ----------------------------------------------------------------------------


def candidate(app_id: int, environment: str, builds: dict[str, Any]) -> Candidate:
    return Candidate(app_id, f"app-{app_id}", f"{environment}-1", environment, builds)


def test_only_apps_that_build_an_edited_file_are_reached():
    moved = [MovedLine("base/deploy.yaml", 9, "api", "1.0", "1.1")]
    found = [
        candidate(1, "prod", {"whole": ["base/deploy.yaml", "prod/kustomization.yaml"]}),
        candidate(2, "prod", {"whole": ["other/deploy.yaml"]}),
        candidate(3, "prod", {"documents": {"base/deploy.yaml": [[1, 12]]}}),
        candidate(4, "prod", {"charts": ["base/deploy.yaml"]}),
        candidate(5, "prod", {}),
    ]
    assert [c.app_id for c, _ in reached_by(moved, found)] == [1, 3, 4]


def test_a_line_the_app_overrides_keeps_its_version_and_a_chart_line_moves_it():
    overlay = Reads(whole={"base/deploy.yaml", "prod/kustomization.yaml"}, overridden={("base/deploy.yaml", 9)})
    moved = [MovedLine("base/deploy.yaml", 9, "api", "latest", "1.1")]
    pins = [("api", "1.0", "prod/kustomization.yaml", 7)]
    assert [(v.subject, v.before, v.after, v.moves) for v in versions_after(overlay, moved, pins)] == [
        ("api", "1.0", "1.0", False)]
    base = Reads(whole={"base/deploy.yaml"})
    assert [(v.before, v.after) for v in versions_after(base, moved, [("api", "latest", "base/deploy.yaml", 9)])] == [
        ("latest", "1.1")]
    umbrella = Reads(whole={"chart/values.yaml"}, charts={"chart/Chart.yaml"})
    chart = [MovedLine("chart/Chart.yaml", 4, "the wordpress chart", "9.0.3", "9.1.0")]
    assert [(v.subject, v.after) for v in versions_after(umbrella, chart, [])] == [("the wordpress chart", "9.1.0")]
    dependency = Reads(chart_defaults={"sub/values.yaml"})
    assert dependency.builds("sub/values.yaml") and not dependency.moves("sub/values.yaml", 3)


def test_beyond_the_target_is_another_environment_or_another_service():
    target = Target(environment="prod", apps=frozenset({1}), services=frozenset({"api"}))
    assert beyond_target(candidate(1, "staging", {}), [], target) == ""  # the offer's own app
    assert beyond_target(candidate(2, "prod", {}), ["api"], target) == ""  # the same service, another cluster
    assert beyond_target(candidate(3, "staging", {}), ["api"], target) == "another environment (staging, not prod)"
    assert beyond_target(candidate(4, "prod", {}), ["worker"], target) == "another service (worker)"


def test_a_grouped_change_names_the_files_its_changes_share():
    moved = [
        MovedLine("base/deploy.yaml", 9, "api", "1.0", "1.1"),
        MovedLine("base/deploy.yaml", 21, "worker", "2.0", "2.1"),
        MovedLine("api/values.yaml", 3, "api", "1.0", "1.1"),
    ]
    [shared] = shared_files(moved)
    assert (shared.path, shared.lines) == ("base/deploy.yaml", ((9, "api"), (21, "worker")))


def test_the_planner_records_which_change_moved_which_line():
    from portal.delivery.planner import plan

    files = {"apps/a/values.yaml": "image:\n  repository: ghcr.io/acme/api\n  tag: 1.0\n"
                                   "worker:\n  image: ghcr.io/acme/worker:2.0\n"}
    changes = [
        Change(kind=UPGRADE, services=("api",), environment="prod", repository="r", base_branch="main",
               path="apps/a", image="ghcr.io/acme/api", from_version="1.0", to_version="1.1"),
        Change(kind=UPGRADE, services=("worker",), environment="prod", repository="r", base_branch="main",
               path="apps/a", image="ghcr.io/acme/worker", from_version="2.0", to_version="2.1"),
    ]
    preview = plan(changes, [], files)
    assert [(m.path, m.line, m.subject, m.to_version) for m in preview.moved] == [
        ("apps/a/values.yaml", 3, "api", "1.1"), ("apps/a/values.yaml", 5, "worker", "2.1")]


def test_the_body_says_which_apps_it_reaches_and_which_lines_share_a_file():
    from portal.delivery.reach import Reach, Reached, SharedFile, Version, describe

    reach = Reach(
        reached=[Reached(1, "api-prod", "prod-1", "prod", ("base/deploy.yaml",), (Version("api", "1.0", "1.1"),)),
                 Reached(2, "api-dev", "dev-1", "dev", ("base/deploy.yaml",), (Version("api", "0.9", "0.9"),),
                         beyond="another environment (dev, not prod)")],
        shared=[SharedFile("base/deploy.yaml", ((9, "api"), (21, "worker")))],
        unread=["worker-prod on prod-1"],
    )
    assert describe(reach) == [
        "",
        "**Reach** (what the portal last read each application builds):",
        "- `prod` / `prod-1` / `api-prod`: api `1.0` → `1.1`",
        "- `dev` / `dev-1` / `api-dev`: api stays `0.9` — **beyond the target**: another environment (dev, not prod)",
        "- `base/deploy.yaml` is shared: line 9 api, line 21 worker",
        "- not read yet, so not known: worker-prod on prod-1",
    ]
