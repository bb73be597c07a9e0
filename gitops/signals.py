"""What the store announces, for read models kept by the layers above it (gitops imports
none of them): they subscribe in their AppConfig.ready()."""

from django.dispatch import Signal

# Sent inside the transaction that wrote one cluster's poll, after its apps, workloads and
# running versions are written, with `cluster=`: a receiver that derives rows from them
# commits (or rolls back) with the poll. A receiver that raises fails the poll, which then
# keeps the last good data like any other store failure.
cluster_stored = Signal()

# Sent by gitops.findings before it judges a cluster's apps, with `apps=` (GitOpsApp rows):
# a receiver returns a dict with any of gitops.findings.FindingContext's fields (the apps a
# portal notification rule covers, what Git pins), which only the layers above know.
finding_context = Signal()
