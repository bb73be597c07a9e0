"""The catalog's revision (portal.kernel.catalog.revision) moves with every saved or deleted service or
cluster, in the writer's transaction, and with nothing else: a writer that bypasses save() says so."""

from __future__ import annotations

import pytest
from django.db import transaction

from gitops.models import ClusterPoll
from portal.kernel.catalog import revision
from portal.kernel.catalog.models import CatalogRevision, Cluster, Environment, Service

pytestmark = pytest.mark.django_db


def test_it_is_zero_before_the_first_change_and_moves_with_each():
    assert revision.current() == 0
    service = Service.objects.create(name="checkout", image_repository="ghcr.io/acme/checkout")
    first = revision.current()
    assert first > 0
    service.image_aliases = ["docker.io/acme/checkout"]
    service.save()
    env = Environment.objects.create(name="prod", order=1)
    cluster = Cluster.objects.create(name="prod-eu-1", environment=env)
    cluster.delete()
    service.delete()
    assert revision.current() == first + 4


def test_a_rolled_back_change_leaves_it_as_it_was():
    Service.objects.create(name="checkout", image_repository="ghcr.io/acme/checkout")
    before = revision.current()
    with pytest.raises(RuntimeError), transaction.atomic():
        Service.objects.create(name="cart", image_repository="ghcr.io/acme/cart")
        raise RuntimeError("the writer gave up")
    assert revision.current() == before


def test_a_poll_writing_its_bookkeeping_does_not_move_it():
    env = Environment.objects.create(name="prod", order=1)
    cluster = Cluster.objects.create(name="prod-eu-1", environment=env)
    before = revision.current()
    ClusterPoll.objects.create(cluster=cluster, last_error="", last_poll_seconds=0.1)  # as gitops.polling does
    assert revision.current() == before


def test_a_writer_that_bypasses_save_says_so_itself():
    # Only save() and delete() send the signals that move it: a queryset update() of what a
    # cluster's objects mean (none in the portal) must call bump() in its transaction.
    env = Environment.objects.create(name="prod", order=1)
    cluster = Cluster.objects.create(name="prod-eu-1", environment=env)
    before = revision.current()
    with transaction.atomic():
        Cluster.objects.filter(pk=cluster.pk).update(argocd_aliases=["eu-west"])
        assert revision.current() == before
        revision.bump()
    assert revision.current() == before + 1


def test_its_row_is_made_again_when_a_flush_removed_it():
    Service.objects.create(name="checkout", image_repository="ghcr.io/acme/checkout")
    CatalogRevision.objects.all().delete()  # as a transactional test's flush does
    assert revision.current() == 0
    Service.objects.create(name="cart", image_repository="ghcr.io/acme/cart")
    assert revision.current() == 1
