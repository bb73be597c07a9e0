"""GitOps discipline findings: a layer above delivery and below the pages.

A finding combines facts of several layers: gitops' rows of a cluster, delivery's Git pins and
the plain Secrets its pin reader found, and which apps a portal notification rule covers.
So it is judged here, above the layers whose facts it reads, on their announcements and rows
(`cluster_stored`, `GitPinRead`), and never asked for from below:

- `discipline`: the rules, pure functions over rows (`RULES`, one principle each);
- `derivation`: storing them when a poll stores a cluster, and the Git ones every minute;
- `mutes`: muting one with a reason, and the open ones pages and the API read.

The `Finding` and `FindingMute` rows stay gitops models (rows of the store, with their
migrations), as the matrix's `Placement` rows are delivery's.
"""
