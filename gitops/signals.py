"""What the store announces, for read models kept by the layers above it (gitops imports
none of them): they subscribe in their AppConfig.ready(). Nothing is asked back: a receiver's
return value is never read (tests/kernel/test_events_are_rows.py)."""

from django.dispatch import Signal

# Sent inside the transaction that wrote one cluster's poll, after its apps, workloads and
# running versions are written, with `cluster=`, `read=` (the ids of the apps this write read
# from that cluster: every app of a full poll, the changed ones of a partial one; empty for a
# cluster announced because another cluster's poll changed what runs there), `every_app=` (True
# when `read` is every app the cluster has now: a full poll, which may have removed others; False
# for a partial poll's changed apps and for a cluster announced for another's poll),
# `running_moved=` (False when the write left the cluster's running versions as they were) and
# `at=` (the poll's time): a receiver that derives rows from them commits (or rolls back) with the poll.
# A receiver that raises fails the poll, which then keeps the last good data like any other
# store failure.
cluster_stored = Signal()
