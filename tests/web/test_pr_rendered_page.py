"""The rendered diff on the pull request's follow page and the full rendered output page: names and
values come from repositories and Argo CD, so they are shown escaped, never as markup."""

from __future__ import annotations

import pytest
from django.utils import timezone

from portal.delivery.models import PullRequest, RenderedDiff
from portal.delivery.rendered_diff import APP_DIFFS, AppDiff, compare

pytestmark = pytest.mark.django_db
HOSTILE = '<script>alert("x")</script>'


@pytest.fixture
def rendered() -> PullRequest:
    pull = PullRequest.objects.create(
        kind="upgrade", services=["checkout"], environment="prod", repository="https://github.com/acme/gitops",
        forge_kind="github", number=4, title="Upgrade checkout", branch="portal/4", base_branch="main", state="open",
        url="https://github.com/acme/gitops/pull/4",
    )
    before = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": HOSTILE, "namespace": "shop"},
              "data": {"mode": "a"}}
    after = {**before, "data": {"mode": HOSTILE}}
    diff = AppDiff(app="argocd/checkout-prod", cluster="prod-eu-1", renderer="Argo CD", before_revision="main",
                   after_revision="9f1c2ab34d5e6f70", comparison=compare([before], [after]))
    RenderedDiff.objects.create(pull_request=pull, head="9f1c2ab34d5e6f70", computed_at=timezone.now(),
                                apps=APP_DIFFS.dump_python([diff], mode="json"),
                                outputs=[{"app": "argocd/checkout-prod", "before": [before], "after": [after]}])
    return pull


def test_the_follow_page_shows_the_diff_escaped(client, users, rendered: PullRequest) -> None:
    client.force_login(users["viewer"])

    page = client.get(f"/pr/opened?id={rendered.pk}").content.decode()

    assert HOSTILE not in page
    assert "ConfigMap shop/&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert ">data.mode<" in page and 'class="unchanged-count">0<' in page
    assert f'href="/pr/{rendered.pk}/rendered"' in page


def test_the_full_output_page_shows_both_sides_escaped(client, users, rendered: PullRequest) -> None:
    client.force_login(users["viewer"])

    page = client.get(f"/pr/{rendered.pk}/rendered").content.decode()

    assert HOSTILE not in page and "&lt;script&gt;" in page
    assert page.count("kind: ConfigMap") == 2
    assert client.get(f"/pr/{rendered.pk + 1}/rendered").status_code == 404
