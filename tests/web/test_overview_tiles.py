"""An overview tile names a service's first few applications in trouble, ranked as people read
them: degraded or missing before out of sync, then by environment, cluster and application, and
says how many more there are; a cluster whose polling is off counts for nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest

from portal.web.tiles import TILE_FLAGS, service_tiles
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db


def test_a_tile_ranks_its_problems_and_counts_the_rest(catalog):
    hour = timedelta(hours=1)
    seed_app(catalog.prod_us, "b-drift", service=catalog.checkout, sync="OutOfSync", since=hour)
    seed_app(catalog.dev_cluster, "a-drift", service=catalog.checkout, sync="OutOfSync", since=hour)
    seed_app(catalog.prod_eu, "z-broken", service=catalog.checkout, health="Degraded", since=hour)
    seed_app(catalog.staging_cluster, "y-missing", service=catalog.checkout, health="Missing", since=hour)
    seed_app(catalog.prod_eu, "c-drift", service=catalog.checkout, sync="OutOfSync", since=hour)
    seed_app(catalog.prod_eu, "fresh", service=catalog.checkout, health="Degraded", since=timedelta(seconds=5))
    seed_app(catalog.prod_eu, "fine", service=catalog.payments)
    catalog.prod_us.enabled = False
    catalog.prod_us.save()

    tiles = {tile.service.name: tile for tile in service_tiles()}
    checkout = tiles["checkout"]
    assert [(f.app, f.cluster, f.label) for f in checkout.flags] == [
        ("y-missing", "staging-eu-1", "Argo: missing"),
        ("z-broken", "prod-eu-1", "Argo: degraded"),
        ("a-drift", "dev-eu-1", "Argo: out of sync"),
        ("c-drift", "prod-eu-1", "Argo: out of sync"),
    ][:TILE_FLAGS]
    # Four in trouble past the grace period on enabled clusters: the one still in it and the
    # one on prod-us-1 (polling off) are not counted.
    assert (checkout.problem_apps, checkout.more) == (4, 0)
    assert not tiles["payments"].attention
    assert [tile.service.name for tile in service_tiles()] == ["checkout", "payments"]


def test_a_tile_says_how_many_problems_it_does_not_show(catalog):
    for i in range(TILE_FLAGS + 2):
        seed_app(catalog.prod_eu, f"app-{i}", service=catalog.payments, sync="OutOfSync", since=timedelta(hours=1))
    [payments] = [tile for tile in service_tiles() if tile.service.name == "payments"]
    assert len(payments.flags) == TILE_FLAGS and (payments.problem_apps, payments.more) == (TILE_FLAGS + 2, 2)
    assert [flag.app for flag in payments.flags] == [f"app-{i}" for i in range(TILE_FLAGS)]
