"""Where raw cluster objects come from, one module per source.

- `base`: the `ClusterSource` protocol, its `ListResult`, `SourceError` and its reasons;
- `decoding`: bounded decoding of untrusted JSON and YAML, shared by every source;
- `kube`: `KubeSource`, a live API server through the official client;
- `manifests`: `ManifestSource`, a folder of manifests or snapshots;
- `argocd_api`: `ArgoCDSource`, an Argo CD API server with a read-only token;
- `agent`: the in-cluster agent that pushes snapshots, and `ReplaySource`, which reads them.

The names below are the package's public face for code that only needs a source and its
errors; the Argo CD API and agent sources are imported from their modules (they build on the
poll's walk over the kinds, which imports this package).
"""

from gitops.sources.base import (
    FORBIDDEN,
    MALFORMED,
    NOT_FOUND,
    REASONS,
    SERVER_ERROR,
    TIMEOUT,
    UNAUTHORIZED,
    UNREACHABLE,
    ClusterSource,
    ListResult,
    SourceError,
)
from gitops.sources.kube import KubeSource
from gitops.sources.manifests import ManifestSource

__all__ = [
    "FORBIDDEN",
    "MALFORMED",
    "NOT_FOUND",
    "REASONS",
    "SERVER_ERROR",
    "TIMEOUT",
    "UNAUTHORIZED",
    "UNREACHABLE",
    "ClusterSource",
    "KubeSource",
    "ListResult",
    "ManifestSource",
    "SourceError",
]
