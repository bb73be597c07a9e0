"""GitOpsAppFilter, the one FilterSet of /gitops and /api/v1/gitops, and the orders of
APP_SORTS: what each name means, the alias, what is invalid, and orders that are total."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gitops.appfilter import SEARCH_MAX, SORT_CHOICES, GitOpsAppFilter
from gitops.models import APP_SORTS, GitOpsApp
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db

AT = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)


@pytest.fixture
def fleet(catalog):
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, now=AT)
    seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, health="Degraded",
             since=timedelta(minutes=40), now=AT)
    seed_app(catalog.staging_cluster, "payments-staging", service=catalog.payments, sync="OutOfSync",
             since=timedelta(minutes=3), now=AT, sync_blocked=True, sync_blocked_until=AT + timedelta(hours=1))
    seed_app(catalog.dev_cluster, "checkout-dev", service=catalog.checkout, tool="flux", health="Progressing",
             since=timedelta(minutes=1), now=AT, project="")
    # Same name on another cluster, so that sorts by name need their later keys.
    seed_app(catalog.prod_us, "checkout-prod", service=catalog.checkout, now=AT, manual_sync=True)
    return catalog


def names(data: dict, at: datetime = AT) -> list[str]:
    return [app.name for app in GitOpsAppFilter(data, GitOpsApp.objects.all(), at=at).qs]


def ids(data: dict) -> list[int]:
    return [app.id for app in GitOpsAppFilter(data, GitOpsApp.objects.all(), at=AT).qs]


def test_without_a_sort_the_order_is_problems_first(fleet):
    default = ids({})
    assert default == list(GitOpsApp.objects.problems_first().values_list("id", flat=True))
    assert default == ids({"sort": "problems"})
    assert names({})[:2] == ["payments-prod", "payments-staging"]


@pytest.mark.parametrize("sort", list(APP_SORTS))
def test_every_order_is_total_and_its_minus_is_its_exact_reverse(fleet, sort):
    forward = ids({"sort": sort})
    assert sorted(forward) == sorted(GitOpsApp.objects.values_list("id", flat=True))
    assert ids({"sort": f"-{sort}"}) == forward[::-1]  # every key flips, the id too: no tie is left


def test_sort_choices_are_every_order_and_its_reverse():
    assert set(SORT_CHOICES) == {*APP_SORTS, *(f"-{name}" for name in APP_SORTS)}


@pytest.mark.parametrize("yes", ["1", "true", "True"])
def test_attention_reads_a_checkbox_or_a_script_and_the_old_name_is_the_same_filter(fleet, yes):
    assert names({"attention": yes}) == ["payments-prod"]  # payments-staging: 3 minutes, not news yet
    assert names({"needs_attention": yes}) == ["payments-prod"]
    assert set(names({"attention": "0"})) == set(names({"needs_attention": "false"})) == {
        "checkout-prod", "payments-staging", "checkout-dev"}


def test_blocked_is_judged_at_the_instant_given(fleet):
    assert names({"status": "blocked"}) == ["payments-staging"]
    assert names({"status": "blocked"}, at=AT + timedelta(hours=2)) == []  # the window has closed since


@pytest.mark.parametrize(("data", "expected"), [
    ({"status": "degraded"}, {"payments-prod"}),
    ({"status": "manual"}, {"checkout-prod"}),
    ({"status": "healthy", "cluster": "prod-eu-1"}, {"checkout-prod"}),
    ({"sync": "OutOfSync"}, {"payments-staging"}),
    ({"health": "Progressing", "tool": "flux"}, {"checkout-dev"}),
    ({"service": "payments", "environment": "prod"}, {"payments-prod"}),
    ({"q": "STAGING"}, {"payments-staging"}),  # a text search ignores case
])
def test_filters_combine_with_and(fleet, data, expected):
    assert set(names(data)) == expected


def test_a_value_it_cannot_read_is_an_error_the_page_may_ignore(fleet):
    data = {"status": "nonsense", "tool": "jenkins", "attention": "maybe", "cluster": " prod-eu-1", "sort": "uid"}
    filterset = GitOpsAppFilter(data, GitOpsApp.objects.all(), at=AT)
    assert not filterset.is_valid()
    assert set(filterset.errors) == set(data)
    assert [app.id for app in filterset.qs] == ids({})  # read as if not given: everything, problems first


def test_a_long_search_is_cut_not_refused(fleet):
    GitOpsApp.objects.filter(name="checkout-dev").update(path="p" * SEARCH_MAX)
    assert names({"q": "p" * (SEARCH_MAX + 50)}) == ["checkout-dev"]


@pytest.mark.parametrize(("column", "value"), [
    ("name", None), ("namespace", "team-blue"), ("repo_url", "https://git.example/blue/deploy.git"),
    ("path", "clusters/blue/apps"), ("chart", "blue-chart"),
])
def test_the_text_search_reads_each_of_its_columns(fleet, column, value):
    from gitops.appfilter import SEARCHED_COLUMNS

    assert column in SEARCHED_COLUMNS
    if value is not None:
        GitOpsApp.objects.filter(name="checkout-dev").update(**{column: value})
    term = "Blue" if value is not None else "Ckout-D"  # any case, any part
    assert names({"q": term}) == ["checkout-dev"]


def test_the_text_search_matches_like_wildcards_literally_and_never_across_two_columns(fleet):
    GitOpsApp.objects.filter(name="checkout-dev").update(path="apps/50%_off", chart="")
    assert names({"q": "50%_off"}) == ["checkout-dev"]
    assert names({"q": "5%f"}) == [] and names({"q": "apps/5_%"}) == []
    # The name ends in "-dev" and the namespace starts with "flux": no text spans both.
    assert names({"q": "dev flux"}) == [] and names({"q": "devflux"}) == []
    assert names({"q": "dev\nflux"}) == []  # the joint of the columns on PostgreSQL is no match either


def test_the_migrations_trigram_index_is_over_the_searchs_own_expression():
    """The planner uses the index only for the same expression: the migration writes it
    out (it may not import the code), so the two are compared here."""
    import importlib

    from gitops.appfilter import SEARCH_SQL

    migration = importlib.import_module("gitops.migrations.0009_app_search_trigram")
    assert migration.SEARCH_SQL == SEARCH_SQL
