"""gitops.queries.apps_loaded_with builds `only()`'s instances without Model.__init__ (issue 40:
the service page of a service in 1,000 clusters); they must be the instances `only()` loads."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from gitops.models import GitOpsApp
from gitops.queries import apps_loaded_with
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db

FIELDS = ("cluster", "tool", "name", "health_since", "running", "read_from")


def test_the_instances_are_those_only_loads(catalog):
    checkout = seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout)
    payments = seed_app(catalog.prod_us, "payments", service=catalog.payments, tool="flux")
    rows = GitOpsApp.objects.filter(pk__in=[checkout.pk, payments.pk]).order_by("pk")

    built = apps_loaded_with(rows, FIELDS)
    loaded = list(rows.only(*FIELDS))
    assert [app.pk for app in built] == [app.pk for app in loaded]
    for mine, django in zip(built, loaded, strict=True):
        assert {field: getattr(mine, field) for field in ("cluster_id", "tool", "name", "health_since", "running",
                                                          "read_from_id")} == {
            field: getattr(django, field) for field in ("cluster_id", "tool", "name", "health_since", "running",
                                                        "read_from_id")}
        assert mine.get_deferred_fields() == django.get_deferred_fields()
        assert not mine._state.adding and mine._state.db == django._state.db
    # A field not loaded is read when touched, as only()'s are: one query.
    with CaptureQueriesContext(connection) as queries:
        assert built[0].namespace == checkout.namespace
    assert len(queries) == 1
