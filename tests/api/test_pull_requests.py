"""GET /api/v1/pull-requests: what the portal opened or linked, newest first, every field."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from portal.delivery.models import PullRequest
from portal.kernel.accounts import tokens

pytestmark = pytest.mark.django_db

URL = "/api/v1/pull-requests"
FIELDS = {"id", "kind", "services", "environment", "clusters", "repository", "number", "url", "title", "state",
          "checks", "from_version", "to_version", "automatic", "opened_by", "opened_at", "merged_at", "closed_at",
          "running_at", "opened_outside", "reach", "rendered_diff", "rolled_back_on"}


@pytest.fixture
def api(client, users):
    _, plain = tokens.issue(users["viewer"], "tests")
    return lambda url, params=None: client.get(url, params or {}, HTTP_AUTHORIZATION=f"Bearer {plain}")


def pull(number: int | None, **fields) -> PullRequest:
    defaults = {
        "kind": "upgrade", "services": ["checkout"], "environment": "prod", "clusters": ["prod-eu-1"],
        "repository": "https://github.com/acme/gitops", "forge_kind": "github", "title": f"PR {number}",
        "branch": f"portal/{number}", "base_branch": "main", "state": "open",
        "url": f"https://github.com/acme/gitops/pull/{number}" if number else "",
    }
    return PullRequest.objects.create(number=number, **{**defaults, **fields})


def test_an_empty_list_before_any_exists(api):
    response = api(URL)
    assert response.status_code == 200
    assert response.json() == {"next": None, "previous": None, "results": []}


def test_every_field(api, users):
    now = timezone.now()
    pull(12, kind="promotion", services=["payments", "checkout"], environment="prod", state="merged", checks="pass",
         opened_by=users["member"], opened_at=now - timedelta(hours=3), merged_at=now - timedelta(hours=1),
         running_at=now - timedelta(minutes=20), from_version="2.4.0", to_version="2.5.0")
    [item] = api(URL).json()["results"]
    assert set(item) == FIELDS
    assert item["kind"] == "promotion" and item["services"] == ["payments", "checkout"]
    assert (item["environment"], item["clusters"]) == ("prod", ["prod-eu-1"])
    assert item["repository"] == "https://github.com/acme/gitops"
    assert (item["number"], item["url"], item["title"]) == (12, "https://github.com/acme/gitops/pull/12", "PR 12")
    assert (item["state"], item["checks"]) == ("merged", "pass")
    assert (item["from_version"], item["to_version"], item["automatic"]) == ("2.4.0", "2.5.0", False)
    assert item["opened_by"] == "member" and item["opened_outside"] is False
    for key, expected in (("opened_at", now - timedelta(hours=3)), ("merged_at", now - timedelta(hours=1)),
                          ("running_at", now - timedelta(minutes=20))):
        assert item[key].endswith("+00:00")
        assert datetime.fromisoformat(item[key]) == expected
    assert item["closed_at"] is None


def test_newest_first_without_worker_claims_and_filters(api):
    now = timezone.now()
    pull(1, opened_at=now - timedelta(days=2), state="closed", kind="rollback")
    pull(2, opened_at=now - timedelta(hours=1), opened_outside=True, environment="staging")
    pull(3, opened_at=now - timedelta(hours=5), state="merged")
    pull(None, state="opening")  # a worker's claim: no pull request on the forge yet
    assert [i["number"] for i in api(URL).json()["results"]] == [2, 3, 1]
    assert [i["number"] for i in api(URL, {"state": "merged"}).json()["results"]] == [3]
    assert [i["number"] for i in api(URL, {"kind": "rollback"}).json()["results"]] == [1]
    assert [i["number"] for i in api(URL, {"environment": "staging"}).json()["results"]] == [2]
    first = api(URL, {"page_size": "2"}).json()
    assert [i["number"] for i in first["results"]] == [2, 3]
    assert [i["number"] for i in api(first["next"]).json()["results"]] == [1]


def test_unknown_parameters_and_values_are_refused(api):
    for params, code in (({"service": "checkout"}, "unknown_parameters"), ({"state": "opening"}, "invalid_parameters"),
                         ({"page_size": "x"}, "invalid_parameters")):
        response = api(URL, params)
        assert response.status_code == 400
        assert response.json()["error"]["code"] == code


def test_one_pull_request_by_id_carries_its_rendered_diff(api):
    from portal.delivery.models import RenderedDiff
    from portal.delivery.rendered_diff import APP_DIFFS, AppDiff, compare

    open_one = pull(7)
    before = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"},
              "spec": {"replicas": 2}}
    after = {**before, "spec": {"replicas": 3}}
    diff = AppDiff(app="argocd/web-prod", cluster="prod-eu-1", renderer="Argo CD", before_revision="main",
                   after_revision="9f1c2ab34d5e", comparison=compare([before], [after]))
    RenderedDiff.objects.create(pull_request=open_one, head="9f1c2ab34d5e", computed_at=timezone.now(),
                                apps=APP_DIFFS.dump_python([diff], mode="json"),
                                outputs=[{"app": "x", "before": [before]}])

    item = api(f"{URL}/{open_one.pk}").json()

    rendered = item["rendered_diff"]
    assert item["id"] == open_one.pk and rendered["head"] == "9f1c2ab34d5e"
    assert rendered["output_url"].endswith(f"/pr/{open_one.pk}/rendered")
    [app] = rendered["apps"]
    assert (app["app"], app["renderer"], app["changed"], app["unchanged"]) == ("argocd/web-prod", "Argo CD", 1, 0)
    assert app["objects"] == [{"kind": "Deployment", "namespace": "shop", "name": "web", "change": "changed",
                               "fields": [{"path": "spec.replicas", "before": "2", "after": "3"}], "more_fields": 0}]
    assert "outputs" not in str(item)  # the full output is the portal page's only
    assert api(URL).json()["results"][0]["rendered_diff"] == rendered
    assert api(f"{URL}/{open_one.pk + 1}").status_code == 404
