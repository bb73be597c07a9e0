"""The one PR planner without a forge or a database: branch, title, description, digest pins, title matching."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from forges.forge import TreeEntry
from portal.delivery.planner import Change, branch_name, branch_prefix, plan
from portal.delivery.prtitles import names_change
from tests.fakes.forges.harness import CHANGE, FILES

PROD = "apps/checkout/overlays/prod"


def change(**overrides: object) -> Change:
    return Change(**{**CHANGE.__dict__, "repository": "https://github.com/acme/gitops", **overrides})


def prod_files() -> dict[str, str]:
    return {path: text for path, text in FILES.items() if path.startswith(PROD)}


def test_plan_rewrites_only_the_tags_and_keeps_blob_shas_for_the_commit() -> None:
    entries = [
        TreeEntry(path, f"sha-{n}", "100755" if "values" in path else "100644")
        for n, path in enumerate(sorted(prod_files()))
    ]

    preview = plan(change(), entries, prod_files(), prefix="portal/")

    values = next(e for e in preview.edits if e.path.endswith("values.yaml"))
    assert values.after == FILES[f"{PROD}/values.yaml"].replace("tag: 1.6.0", "tag: 1.7.0")
    assert (values.sha, values.mode) == ("sha-2", "100755")
    assert preview.can_open and preview.problems == []
    assert preview.commit_message.startswith("Update checkout to 1.7.0 in prod\n\nUpdate ghcr.io/acme/checkout")


def test_a_digest_pin_is_reported_and_left_alone() -> None:
    files = {f"{PROD}/migrations.yaml": FILES[f"{PROD}/migrations.yaml"]}

    preview = plan(change(), [], files)

    assert preview.edits == [] and not preview.can_open
    assert [(p.path, p.line) for p in preview.digest_pinned] == [(f"{PROD}/migrations.yaml", 8)]
    assert f"- `{PROD}/migrations.yaml` line 8" in preview.description


def test_a_pin_at_another_version_is_a_problem_not_an_edit() -> None:
    preview = plan(change(from_version="1.5.0"), [], prod_files())

    assert preview.edits == []
    assert preview.problems == ["ghcr.io/acme/checkout is pinned at 1.6.0, not at 1.5.0"]


def test_an_image_that_is_not_pinned_under_the_path_is_a_problem() -> None:
    preview = plan(change(image="ghcr.io/acme/other"), [], prod_files())

    assert preview.problems == ["ghcr.io/acme/other is not pinned anywhere under `apps/checkout/overlays/prod`"]


def test_rollback_says_what_went_wrong_and_since_when() -> None:
    rollback = change(
        kind="rollback",
        from_version="1.6.0",
        to_version="1.5.2",
        failure="CrashLoopBackOff in checkout pods",
        failing_since=datetime(2026, 1, 5, 7, 40, tzinfo=UTC),
    )
    files = {f"{PROD}/values.yaml": FILES[f"{PROD}/values.yaml"]}

    preview = plan(rollback, [], files, prefix="portal/")

    assert preview.title == "Roll back checkout to 1.5.2 in prod"
    assert preview.branch == "portal/checkout-1.5.2-prod"
    assert "1.6.0 is failing since 2026-01-05 07:40 UTC: CrashLoopBackOff in checkout pods." in preview.description


def test_promotion_title_and_release_notes() -> None:
    preview = plan(change(kind="promotion"), [], prod_files())

    assert preview.title == "Promote checkout 1.7.0 to prod"
    assert "> - Faster checkout\n> - Fixes #42" in preview.description


def test_branch_names_are_safe_refs_and_the_prefix_is_configurable() -> None:
    odd = change(services=("pay ments",), to_version="2.0.0..rc1", environment="prod/eu")

    assert branch_name(odd, "portal/") == "portal/pay-ments-2.0.0.rc1-prod-eu"
    assert branch_prefix("gitops-bot") == "gitops-bot/"
    assert branch_prefix("") == "portal/"
    assert branch_name(change(), branch_prefix("bots/portal/")) == "bots/portal/checkout-1.7.0-prod"


def test_the_branch_prefix_comes_from_settings(settings: object) -> None:
    settings.PORTAL_BRANCH_PREFIX = "gitops-bot"  # type: ignore[attr-defined]

    assert branch_prefix() == "gitops-bot/"
    assert plan(change(), [], prod_files()).branch == "gitops-bot/checkout-1.7.0-prod"


def test_unknown_change_kinds_are_refused() -> None:
    with pytest.raises(ValueError):
        change(kind="merge")


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("Update ghcr.io/acme/checkout Docker tag to v1.7.0", True),
        ("chore(deps): update ghcr.io/acme/checkout docker tag to v1.7.0", True),
        ("fix(deps)!: update ghcr.io/acme/checkout docker tag to v1.7.0 (main)", True),
        ("Update ghcr.io/acme/checkout Docker tag to v1.7.0 - autoclosed", True),
        ("Update ghcr.io/acme/checkout Docker tag to v1", True),  # a major bump names only the major
        ("Update ghcr.io/acme/checkout Docker tag to v2", False),
        ("Update ghcr.io/acme/checkout Docker tag to v1.7.1", False),
        ("Update ghcr.io/acme/checkout-worker Docker tag to v1.7.0", False),
        ("Update ghcr.io/acme/checkout:1.6.0 Docker digest to 6f9a209", False),
        ("Bump acme/checkout from 1.6.0 to 1.7.0", True),
        ("chore(deps): bump acme/checkout from 1.6.0 to 1.7.0 in /apps/checkout/overlays/prod", True),
        ("⬆️ Bump acme/checkout from 1.6.0 to 1.7.0", True),
        ("[Security] Bump acme/checkout from 1.6.0 to 1.7.0", True),
        ("Bump acme/checkout from 1.6.0 to 1.7.1", False),
        ("Bump other/checkout from 1.6.0 to 1.7.0", False),
        ("Update checkout to 1.7.0 in prod", True),
        ("checkout: v1.7.0 for prod", True),
        ("Update checkout to 1.7.0 in staging", False),
        ("Update checkout to 1.7.01 in prod", False),
        ("Update checkout-api to 1.7.0 in prod", False),
        ("Update checkout to 1.7.0-rc.1 in prod", False),
    ],
)
def test_titles_that_name_the_change(title: str, expected: bool) -> None:
    assert names_change(title, change()) is expected


def test_dependabot_keeps_docker_hub_short_names() -> None:
    nginx = change(services=("edge",), image="nginx", from_version="1.25.4", to_version="1.26.0")

    assert names_change("Bump nginx from 1.25.4 to 1.26.0", nginx)
    assert names_change("Update nginx Docker tag to v1.26.0", nginx)
    assert names_change("Update docker.io/library/nginx Docker tag to v1.26.0", nginx)


# --- a group: several changes, one pull request ---------------------------------------

SHARED = f"{PROD}/kustomization.yaml"
TWO_IMAGES = (
    "images:\n  - name: ghcr.io/acme/checkout\n    newTag: 1.6.0\n"
    "  - name: ghcr.io/acme/cart\n    newTag: 2.0.0\n"
)


def cart(**overrides: object) -> Change:
    values = {"services": ("cart",), "image": "ghcr.io/acme/cart", "from_version": "2.0.0", "to_version": "2.1.0"}
    return change(**{"release_notes": "", **values, **overrides})


def test_a_group_edits_one_file_once_with_every_change_in_it() -> None:
    entries = [TreeEntry(SHARED, "sha-k")]

    preview = plan([change(), cart()], entries, {SHARED: TWO_IMAGES}, prefix="portal/")

    [edit] = preview.edits
    assert edit.after == TWO_IMAGES.replace("1.6.0", "1.7.0").replace("2.0.0", "2.1.0")
    assert [c.line for c in edit.lines] == [3, 5] and edit.sha == "sha-k"
    assert preview.branch == "portal/checkout-1.7.0-cart-2.1.0-prod"
    assert preview.title == "Update checkout to 1.7.0, cart to 2.1.0 in prod"
    assert preview.change.services == ("checkout", "cart")
    assert (preview.change.from_version, preview.change.to_version) == ("1.6.0,2.0.0", "1.7.0,2.1.0")
    assert "- checkout (`ghcr.io/acme/checkout`): `1.6.0` → `1.7.0`" in preview.description
    assert f"- `{SHARED}` (lines 3, 5)" in preview.description
    assert "Release notes for checkout 1.7.0:" in preview.description
    assert preview.commit_message.endswith("checkout 1.6.0 -> 1.7.0; cart 2.0.0 -> 2.1.0.\n")


def test_a_group_of_one_is_planned_as_the_single_change() -> None:
    single, group = plan(change(), [], prod_files()), plan([change()], [], prod_files())

    assert (group.branch, group.title, group.description, group.commit_message) == (
        single.branch,
        single.title,
        single.description,
        single.commit_message,
    )
    assert group.change == single.change == change()


def test_in_a_group_each_problem_names_its_service_and_a_promotion_names_each_version() -> None:
    promotion = [change(kind="promotion"), cart(kind="promotion", from_version="1.9.0")]

    preview = plan(promotion, [], {SHARED: TWO_IMAGES})

    assert preview.title == "Promote checkout 1.7.0, cart 2.1.0 to prod"
    assert preview.problems == ["cart: ghcr.io/acme/cart is pinned at 2.0.0, not at 1.9.0"]
    assert [e.path for e in preview.edits] == [SHARED]


def test_a_long_group_branch_is_cut_and_stays_unique() -> None:
    many = [cart(services=(f"service-number-{n:02d}",), to_version=f"2.{n}.0") for n in range(12)]

    first = branch_name(many, "portal/")
    other = branch_name([*many[:-1], cart(services=("service-number-11",), to_version="2.99.0")], "portal/")

    assert len(first) <= len("portal/") + 180 and first != other
    assert first.startswith("portal/service-number-00-2.0.0-")


def test_one_service_in_two_overlays_of_an_environment_is_named_once() -> None:
    """A matrix line of prod-eu-1 (overlays/prod) and prod-ap-1 (overlays/prod-ap): one pull
    request, both files, and a title and branch that name the service and version once."""
    ap = "apps/checkout/overlays/prod-ap"
    files = {SHARED: TWO_IMAGES, f"{ap}/kustomization.yaml": TWO_IMAGES}
    group = [change(clusters=("prod-eu-1",)), change(path=ap, clusters=("prod-ap-1",))]

    preview = plan(group, [], files)

    assert preview.title == "Update checkout to 1.7.0 in prod"
    assert preview.branch == "portal/checkout-1.7.0-prod"
    assert [e.path for e in preview.edits] == sorted([SHARED, f"{ap}/kustomization.yaml"])
    assert preview.change.clusters == ("prod-eu-1", "prod-ap-1")


def test_changes_that_land_in_one_place_are_planned_once() -> None:
    """Four clusters whose applications build the same overlay: one edit, no "is at 1.7.0" problem."""
    group = [change(clusters=(name,), apps=(n,)) for n, name in enumerate(["prod-eu-1", "prod-us-1", "prod-eu-2"])]

    preview = plan(group, [], {SHARED: TWO_IMAGES})

    assert preview.problems == [] and [e.path for e in preview.edits] == [SHARED]
    assert preview.title == "Update checkout to 1.7.0 in prod"
    assert preview.change.clusters == ("prod-eu-1", "prod-us-1", "prod-eu-2")
    assert preview.change.apps == (0, 1, 2)
