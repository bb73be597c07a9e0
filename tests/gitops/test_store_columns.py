"""Statements written as SQL text (gitops.store.columns) write and read values exactly as the ORM
does, on either database: a time, a JSON document, nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gitops.clusterpoll import ClusterObjectVersions, ClusterPoll
from gitops.store import columns
from portal.kernel.catalog.models import Cluster, Environment

pytestmark = pytest.mark.django_db

AT = datetime(2026, 12, 7, 12, 30, 15, 123456, tzinfo=UTC)


def test_a_time_and_a_json_document_round_trip_as_the_orm_writes_and_reads_them():
    cluster = Cluster.objects.create(name="c1", environment=Environment.objects.create(name="dev", order=0))
    versions = {"context": "x", "apps": {"Application": {"u-1": "41"}}, "claims": {}, "note": "é \u2028 [ }"}
    columns.execute('INSERT INTO "gitops_clusterobjectversions" ("cluster_id", "versions", "full_poll_trusted_until") '
                    "VALUES (%s, %s, %s)",
                    [cluster.pk, columns.param(ClusterObjectVersions, "versions", versions),
                     columns.param(ClusterObjectVersions, "full_poll_trusted_until", AT)])
    stored = ClusterObjectVersions.objects.get(pk=cluster.pk)  # read by the ORM
    assert (stored.versions, stored.full_poll_trusted_until) == (versions, AT)

    ClusterPoll.objects.create(cluster=cluster, last_poll_at=AT + timedelta(seconds=1))  # written by the ORM
    ((versions_read, until_read, last_poll_read, error_read),) = columns.fetch(
        'SELECT v."versions", v."full_poll_trusted_until", p."last_poll_at", p."stale_since" '
        'FROM "gitops_clusterobjectversions" v JOIN "gitops_clusterpoll" p ON p."cluster_id" = v."cluster_id"', [])
    assert columns.read(ClusterObjectVersions, "versions", versions_read) == versions
    assert columns.read(ClusterObjectVersions, "full_poll_trusted_until", until_read) == AT
    assert columns.read(ClusterPoll, "last_poll_at", last_poll_read) == AT + timedelta(seconds=1)
    assert columns.read(ClusterPoll, "stale_since", error_read) is None


def test_a_poll_task_reads_its_cluster_as_the_orm_would_and_not_a_disabled_one():
    from gitops.tasks import enabled_cluster

    cluster = Cluster.objects.create(
        name="prod-eu-1", environment=Environment.objects.create(name="prod", order=2, production=True),
        connection=Cluster.Connection.API, api_url="https://k8s.example:6443", token_env="PROD_TOKEN",
        verify_tls=False, argocd_aliases=["in-cluster", "https://kubernetes.default.svc"])
    read = enabled_cluster(cluster.pk)
    expected = Cluster.objects.get(pk=cluster.pk)
    assert read is not None and read.pk == cluster.pk
    assert {f.attname: getattr(read, f.attname) for f in Cluster._meta.concrete_fields} == {
        f.attname: getattr(expected, f.attname) for f in Cluster._meta.concrete_fields}
    assert read.verify_tls is False and read.enabled is True and not read._state.adding
    Cluster.objects.filter(pk=cluster.pk).update(enabled=False)
    assert enabled_cluster(cluster.pk) is None
