"""A poll leaves nothing for Python's cycle collector (issue 40): the collector is paused for a
whole poll (gitops.sources.decoding.collector_paused), so whatever a poll leaves in a reference
cycle is walked and freed by the first collection after it, in the poll process's time. A kind
the cluster does not serve (most clusters miss some CRD) kept its SourceError with a traceback
whose frame held the whole listing: every poll left its decoded objects to the collector."""

from __future__ import annotations

import gc

import pytest

from gitops import kinds
from gitops.listing import Listing
from gitops.polling import poll
from gitops.sources import SourceError
from portal.kernel.catalog.fleetfile import load_fleet
from portal.kernel.catalog.models import Cluster
from tests.gitops.test_poll import demo_objects
from tests.gitops.test_poll_dedup import ROOT, TOKEN_ENV

pytestmark = pytest.mark.django_db


def test_a_poll_of_a_cluster_missing_some_kinds_leaves_no_cycle(kube_emulator, monkeypatch):
    load_fleet(ROOT / "examples" / "fleet.yaml")
    monkeypatch.setenv(TOKEN_ENV, kube_emulator.token)
    kube_emulator.add_all(demo_objects("prod-eu-1"))
    flux_sources = set(kinds.kinds_for(kinds.FLUX_SOURCES))
    for spec in kinds.KINDS:
        if spec not in flux_sources:  # no Flux source CRD: each of them answers 404
            kube_emulator.install(spec.api_version(spec.versions[0]), spec.plural, spec.kind)
    Cluster.objects.filter(name="prod-eu-1").update(
        connection=Cluster.Connection.API, api_url=kube_emulator.url, token_env=TOKEN_ENV)
    cluster = Cluster.objects.get(name="prod-eu-1")
    assert poll(cluster).ok

    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        assert poll(cluster).ok
        gc.collect()
        left = [obj for obj in gc.garbage if isinstance(obj, Listing | SourceError)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert left == []
