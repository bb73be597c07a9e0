"""Where a change lands: the Git repository, branch and path that hold the pin, previewed and
opened through the real forge clients against each forge's fake.

- The demo's Flux HelmRelease `notifications` (chart from a Helm repository): the change goes to
  the values beside it, in the repository and path of the Kustomization that applied it.
- Argo CD: a `$values` ref source, an app-of-apps parent, or why there is no Git location.
- `HEAD` is the forge's default branch (`trunk` here); a tag is not a branch: said, and proposed
  on the default branch only once confirmed.
- Grouped: two services in two paths of one repository make one pull request, one commit."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from gitops.git_locations import COMMIT, DEFAULT, NAME, RANGE, TAG, pin_source, revision_kind
from gitops.models import GitOpsApp
from portal.delivery.change_builders import (
    ChangeError,
    change_for_promotion,
    change_for_upgrade,
    group_changes,
)
from portal.delivery.change_previews import open_change, preview_change
from portal.kernel.catalog.models import Service
from tests.fakes.forges.harness import FILES, KINDS, PROD, Harness, serving
from tests.fixtures.seed import seed_app

# Opening through the page queues a job; here it runs in the request (these tests are not about the job).
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery")]

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "gitops-repo"
NOTIFICATIONS = "apps/notifications/overlays/prod"
CHARTS = "https://charts.acme-shop.io"
PAYMENTS = "apps/payments/prod"


def demo_files(folder: str) -> dict[str, str]:
    return {str(p.relative_to(DEMO)): p.read_text() for p in sorted((DEMO / folder).rglob("*")) if p.is_file()}


def demo_helmrelease() -> dict:
    """The notifications HelmRelease as prod-us-1's Flux holds it (examples/clusters)."""
    path = ROOT / "examples" / "clusters" / "prod-us-1" / "flux-system" / "helm.yaml"
    return next(d for d in yaml.safe_load_all(path.read_text()) if d and d["kind"] == "HelmRelease"
                and d["metadata"]["name"] == "notifications")


@pytest.fixture
def notifications() -> Service:
    return Service.objects.create(name="notifications", image_repository="ghcr.io/acme-shop/notifications")


def seed_helmrelease(cluster, service: Service, raw: dict, version: str = "0.8.4") -> GitOpsApp:
    return seed_app(cluster, "notifications", service=service, version=version, tool="flux", kind="HelmRelease",
                    namespace="notifications", repo_url=CHARTS, path="", chart="notifications",
                    target_revision="0.3.1", raw=raw,
                    sources=[{"repo_url": CHARTS, "path": "", "chart": "notifications", "target_revision": "0.3.1",
                              "ref": "HelmRepository/flux-system/acme-charts"}])


@pytest.fixture(params=KINDS)
def demo_repo(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    files = {**FILES, **demo_files("apps/notifications")}  # and another application's folders
    with serving(request.param, monkeypatch, files) as harness:
        yield harness


def test_a_helmrelease_change_goes_to_the_values_beside_it_not_to_the_chart_repository(
    catalog, notifications, demo_repo
):
    # The Kustomization that applied the HelmRelease (its kustomize.toolkit.fluxcd.io labels).
    seed_app(catalog.prod_us, "notifications", tool="flux", kind="Kustomization", namespace="flux-system",
             repo_url=demo_repo.repository, path=f"./{NOTIFICATIONS}", target_revision="main")
    release = seed_helmrelease(catalog.prod_us, notifications, demo_helmrelease())

    source = pin_source(release)
    change = change_for_promotion(release, notifications, "0.9.0", release_notes="")
    delivery = preview_change(change, forge=demo_repo.new_forge())

    assert (source.repository, source.revision, source.path) == (demo_repo.repository, "main", NOTIFICATIONS)
    assert delivery.error == "" and delivery.can_open
    [edit] = delivery.preview.edits
    assert edit.path == f"{NOTIFICATIONS}/values.yaml"
    assert [(line.line, line.before, line.after) for line in edit.lines] == [
        (6, '  tag: "0.8.4"', '  tag: "0.9.0"')
    ]
    assert delivery.change.base_branch == "main"
    # One tree read; of the files, only what this HelmRelease builds is read.
    reads = [path for method, path, _status in demo_repo.server.log if method == "GET" and "checkout" in path]
    assert reads == []


def test_a_helmrelease_whose_kustomization_is_unknown_says_why_instead_of_a_change(catalog, notifications):
    raw = demo_helmrelease()
    no_labels = {**raw, "metadata": {k: v for k, v in raw["metadata"].items() if k != "labels"}}
    release = seed_helmrelease(catalog.prod_us, notifications, no_labels)

    with pytest.raises(ChangeError) as raised:
        change_for_upgrade(release, notifications, "0.9.0")
    assert "kustomize.toolkit.fluxcd.io/name" in str(raised.value)
    assert "Helm repository" in str(raised.value)

    labelled = seed_helmrelease(catalog.prod_eu, notifications, raw)  # its Kustomization was never read
    with pytest.raises(ChangeError, match="Kustomization flux-system/notifications"):
        change_for_upgrade(labelled, notifications, "0.9.0")


# --- Argo CD ---------------------------------------------------------------------------


def test_a_values_ref_source_is_where_an_argo_cd_helm_chart_is_pinned(catalog):
    raw = {
        "metadata": {"name": "payments-prod", "namespace": "argocd"},
        "spec": {"sources": [
            {"repoURL": "https://charts.bitnami.com/bitnami", "chart": "nginx", "targetRevision": "15.9.0",
             "helm": {"valueFiles": ["$values/envs/prod/payments/values.yaml",
                                     "$values/envs/prod/payments/secrets.yaml"]}},
            {"repoURL": "https://github.com/acme/values.git", "targetRevision": "HEAD", "ref": "values"},
        ]},
    }
    app = seed_app(catalog.prod_eu, "payments-prod", raw=raw, repo_url="https://charts.bitnami.com/bitnami",
                   path="", chart="nginx", target_revision="15.9.0", sources=[
                       {"repo_url": "https://charts.bitnami.com/bitnami", "chart": "nginx",
                        "target_revision": "15.9.0", "path": "", "ref": ""},
                       {"repo_url": "https://github.com/acme/values.git", "chart": "", "target_revision": "HEAD",
                        "path": "", "ref": "values"}])

    source = pin_source(app)

    assert (source.repository, source.revision, source.path) == (
        "https://github.com/acme/values.git", "HEAD", "envs/prod/payments")


def chart_only(catalog, name: str, **raw_metadata) -> GitOpsApp:
    raw = {"metadata": {"name": name, "namespace": "argocd", **raw_metadata},
           "spec": {"source": {"repoURL": "oci://ghcr.io/acme/charts", "chart": "cart", "targetRevision": "2.1.0",
                               "helm": {"valuesObject": {"image": {"tag": "2.1.0"}}}}}}
    return seed_app(catalog.prod_eu, name, raw=raw, repo_url="oci://ghcr.io/acme/charts", path="", chart="cart",
                    target_revision="2.1.0", sources=[{"repo_url": "oci://ghcr.io/acme/charts", "chart": "cart",
                                                       "target_revision": "2.1.0", "path": "", "ref": ""}])


def test_a_chart_only_application_is_changed_where_its_app_of_apps_parent_keeps_it(catalog):
    parent_raw = {"metadata": {"name": "apps", "namespace": "argocd"},
                  "status": {"resources": [{"group": "argoproj.io", "kind": "Application", "namespace": "argocd",
                                            "name": "cart-prod", "status": "Synced"}]}}
    seed_app(catalog.prod_eu, "apps", raw=parent_raw, repo_url="https://github.com/acme/platform.git",
             path="argocd/apps/prod", target_revision="main")
    by_resources = chart_only(catalog, "cart-prod")
    tracked = chart_only(catalog, "cart-canary",
                         annotations={"argocd.argoproj.io/tracking-id": "apps:argoproj.io/Application:argocd/cart"})

    for app in (by_resources, tracked):
        source = pin_source(app)
        assert (source.repository, source.revision, source.path) == (
            "https://github.com/acme/platform.git", "main", "argocd/apps/prod"), app.name
        assert source.via == "the Application apps"


def test_a_chart_only_application_with_no_parent_says_why_and_offers_nothing(catalog):
    orphan = chart_only(catalog, "cart-orphan")

    source = pin_source(orphan)

    assert not source.found
    assert "does not open pull requests on chart repositories" in source.unknown
    with pytest.raises(ChangeError, match="no Git repository that defines it is known"):
        change_for_upgrade(orphan, catalog.checkout, "9.9.9", from_version="1.0.0")


@pytest.mark.parametrize("revision, kind", [
    ("", DEFAULT), ("HEAD", DEFAULT), ("main", NAME), ("release/2026.01", NAME), ("v1.4.0", NAME),
    ("refs/tags/v1.4.0", TAG), ("4f1d2c3b5a6978877665544332211aabbccddeef", COMMIT),
    ("1.2.*", RANGE), (">=1.0.0 <2.0.0", RANGE), ("~1.2", RANGE), ("^1.2.0", RANGE), ("*", RANGE), ("1.x", RANGE),
])
def test_how_a_revision_reads_without_a_forge(revision, kind):
    assert revision_kind(revision) == kind


# --- branches ------------------------------------------------------------------------


@pytest.fixture(params=KINDS)
def trunk(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    # The repository's HEAD is `trunk`; `v2.0.0` is a tag there, not a branch.
    with serving(request.param, monkeypatch, dict(FILES), default_branch="trunk") as harness:
        yield harness


def test_a_head_tracking_app_previews_against_the_default_branch(catalog, trunk):
    app = seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0",
                   repo_url=trunk.repository, path=PROD, target_revision="HEAD")

    delivery = preview_change(change_for_upgrade(app, catalog.checkout, "1.7.0"), forge=trunk.new_forge())

    assert delivery.error == "" and delivery.follows == "" and delivery.can_open
    assert delivery.change.base_branch == "trunk"
    assert {edit.path for edit in delivery.preview.edits} == {f"{PROD}/kustomization.yaml", f"{PROD}/values.yaml"}
    assert "on `trunk`" in delivery.preview.description


def test_a_tag_tracking_app_says_so_and_opens_on_the_default_branch_only_when_confirmed(catalog, users, trunk):
    app = seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0",
                   repo_url=trunk.repository, path=PROD, target_revision="v2.0.0")
    change = change_for_upgrade(app, catalog.checkout, "1.7.0")

    unconfirmed = preview_change(change, forge=trunk.new_forge())
    refused = open_change(change, users["member"], forge=trunk.new_forge())
    confirmed = preview_change(change, forge=trunk.new_forge(), confirm_default_branch=True)
    opened = open_change(change, users["member"], forge=trunk.new_forge(), confirm_default_branch=True)

    assert unconfirmed.follows == "the tag v2.0.0" and unconfirmed.needs_confirmation
    assert not unconfirmed.can_open and unconfirmed.preview.edits  # the diff is shown, the button is not
    assert "checkout-prod follows the tag v2.0.0, not a branch" in unconfirmed.warnings[0]
    assert not refused.ok and "follows the tag v2.0.0" in refused.message
    assert confirmed.can_open and confirmed.change.base_branch == "trunk"
    assert opened.ok, opened.message
    [pull] = trunk.model.open_pulls()
    assert pull.base == "trunk"


# --- one pull request per repository ---------------------------------------------------


@pytest.fixture(params=KINDS)
def monorepo(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    files = dict(FILES)
    files[f"{PAYMENTS}/values.yaml"] = "image:\n  repository: ghcr.io/acme/payments\n  tag: 3.0.0\n"
    with serving(request.param, monkeypatch, files) as harness:
        yield harness


def test_two_services_in_two_paths_of_one_repository_make_one_pull_request(catalog, users, monorepo):
    checkout = seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0",
                        repo_url=monorepo.repository, path=PROD)
    payments = seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, version="3.0.0",
                        repo_url=monorepo.repository, path=PAYMENTS)
    changes = [change_for_upgrade(checkout, catalog.checkout, "1.7.0"),
               change_for_upgrade(payments, catalog.payments, "3.1.0")]

    [group] = group_changes(changes)
    result = open_change(group, users["member"], forge=monorepo.new_forge())

    assert result.ok, result.message
    [pull] = monorepo.model.open_pulls()
    [commit] = monorepo.model.commits_between("main", pull.head)
    files = monorepo.model.files_at(pull.head)
    assert "newTag: \"1.7.0\"" in files[f"{PROD}/kustomization.yaml"]
    assert "tag: 3.1.0" in files[f"{PAYMENTS}/values.yaml"]
    changed = {path for path, blob in commit.files.items()
               if blob != monorepo.model.commits[monorepo.model.branches["main"]].files.get(path)}
    assert changed == {f"{PROD}/kustomization.yaml", f"{PROD}/values.yaml", f"{PAYMENTS}/values.yaml"}
    assert f"- checkout (`ghcr.io/acme/checkout`): `1.6.0` → `1.7.0` in `{PROD}`" in pull.body
    assert f"- payments (`ghcr.io/acme/payments`): `3.0.0` → `3.1.0` in `{PAYMENTS}`" in pull.body


def test_each_change_of_a_group_edits_only_its_own_path(catalog, users, monorepo):
    # Two prod clusters' applications pin checkout at 1.6.0 in two folders of one repository.
    prod_us = "apps/checkout/overlays/prod-us"
    monorepo.model.branches["main"] = monorepo.model.commit(
        {**monorepo.model.commits[monorepo.model.branches["main"]].files,
         f"{prod_us}/kustomization.yaml": ("100644", monorepo.model.put_blob(
             b"resources:\n  - ../../base\nimages:\n  - name: ghcr.io/acme/checkout\n    newTag: 1.6.0\n"))},
        [monorepo.model.branches["main"]], "prod-us overlay")
    eu = seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0",
                  repo_url=monorepo.repository, path=PROD)
    us = seed_app(catalog.prod_us, "checkout-prod-us", service=catalog.checkout, version="1.6.0",
                  repo_url=monorepo.repository, path=prod_us)

    [group] = group_changes([change_for_upgrade(eu, catalog.checkout, "1.7.0"),
                             change_for_upgrade(us, catalog.checkout, "1.7.0")])
    delivery = preview_change(group, forge=monorepo.new_forge())

    assert delivery.problems == []
    assert {edit.path for edit in delivery.preview.edits} == {
        f"{PROD}/kustomization.yaml", f"{PROD}/values.yaml", f"{prod_us}/kustomization.yaml"}


def test_the_preview_page_asks_to_confirm_the_default_branch_and_opening_carries_it(client, catalog, users, trunk):
    from django.urls import reverse

    app = seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0",
                   repo_url=trunk.repository, path=PROD, target_revision="v2.0.0")
    client.force_login(users["member"])
    query = {"kind": "upgrade", "service": "checkout", "app": app.pk, "to": "1.7.0"}

    asked = client.get(reverse("pr-preview"), query).content.decode()
    confirmed = client.get(reverse("pr-preview"), {**query, "confirm": "1"}).content.decode()
    opened = client.post(reverse("pr-open"), {"kind": "upgrade", "item": f"{app.pk}:checkout:1.7.0", "confirm": "1"})

    assert 'class="confirm-default-branch"' in asked and 'name="confirm" value="1" required' in asked
    assert "The tag v2.0.0 is not a branch" in asked
    open_form = f'action="{reverse("pr-open")}"'
    assert open_form not in asked and "Nothing here can be opened" in asked
    assert 'class="confirm-default-branch"' not in confirmed
    assert open_form in confirmed and '<input type="hidden" name="confirm" value="1">' in confirmed
    assert opened.status_code == 302
    [pull] = trunk.model.open_pulls()
    assert pull.base == "trunk"
