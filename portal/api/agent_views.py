"""POST /api/v1/agents/<cluster>/snapshots: where in-cluster agents report (gitops.sources.agent).

The one write the API takes, and it writes only what a poll would: the snapshot is replayed
through `gitops.polling.poll`, so a pushed cluster is stored exactly as a polled one. An agent
token may write its own cluster and nothing else; a token presented for another cluster is
refused and audited. A snapshot older than the newest stored with the token (a replay, or one
held back by a retry) is refused with 409. The body is read in pieces and inflated up to
settings.PORTAL_AGENT_MAX_SNAPSHOT_BYTES, never all at once beyond that.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from gitops.polling import poll
from gitops.sources.agent import SEQUENCE_HEADER, ReplaySource, SnapshotError, decode_body
from portal.kernel.audit.models import record
from portal.kernel.catalog import agents
from portal.kernel.catalog.models import AgentToken, Cluster
from portal.kernel.metrics import AGENT_PUSHES, status_class

_CHUNK = 256 * 1024


def _error(status: int, detail: str, **headers: str) -> JsonResponse:
    response = JsonResponse({"detail": detail}, status=status)
    for name, value in headers.items():
        response[name] = value
    return response


def _body(request: HttpRequest, limit: int) -> Iterator[bytes]:
    """The request body in pieces, at most `limit` compressed bytes (Django's body size cap
    applies to `request.body`, which this never touches)."""
    read = 0
    while True:
        chunk = request.read(_CHUNK)
        if not chunk:
            return
        read += len(chunk)
        if read > limit:
            raise SnapshotError(413, f"snapshot larger than {limit:,} bytes compressed")
        yield chunk


@csrf_exempt
@require_POST
def receive_snapshot(request: HttpRequest, cluster: str) -> JsonResponse:
    """A pushed snapshot, counted for /metrics by the answer's status class (never the cluster's
    token or the refusal's text)."""
    response = _receive(request, cluster)
    AGENT_PUSHES.labels(status=status_class(response.status_code)).inc()
    return response


def _receive(request: HttpRequest, cluster: str) -> JsonResponse:
    scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
    token = agents.active(presented.strip()) if scheme.lower() == "bearer" else None
    if token is None:
        return _error(401, "an agent token is required (revoked, unknown or missing)",
                      **{"WWW-Authenticate": 'Bearer realm="agents"'})
    if token.cluster.name != cluster:
        record(None, "agent.refused", cluster, reason="token of another cluster", token=token.prefix,
               token_cluster=token.cluster.name)
        return _error(403, "this token may write only its own cluster")
    target: Cluster = token.cluster
    if target.connection != Cluster.Connection.AGENT or not target.enabled:
        return _error(409, f"{cluster} is not read by an agent (its connection is {target.get_connection_display()})")
    try:
        sequence = int(request.headers.get(SEQUENCE_HEADER, ""))
    except ValueError:
        return _error(400, f"the {SEQUENCE_HEADER} header is required")
    if sequence <= token.last_sequence:
        record(None, "agent.replay_refused", cluster, token=token.prefix, sequence=sequence,
               newest=token.last_sequence)
        return _error(409, "a newer snapshot is already stored")
    limit = settings.PORTAL_AGENT_MAX_SNAPSHOT_BYTES
    try:
        snapshot, cut = decode_body(_body(request, limit), limit=limit)
    except SnapshotError as exc:
        return _error(exc.status, str(exc))
    if snapshot["cluster"] != cluster or snapshot["sequence"] != sequence:
        return _error(400, "the snapshot's cluster or sequence differs from the request's")
    report = poll(target, source=ReplaySource(cluster, snapshot, cut=cut))
    if report.skipped:
        return _error(503, report.skipped, **{"Retry-After": "5"})
    # Only a stored snapshot moves the sequence on, so one lost mid-push is sent again and taken.
    now = timezone.now()
    AgentToken.objects.filter(pk=token.pk, last_sequence__lt=sequence).update(last_sequence=sequence, last_used_at=now)
    return JsonResponse({"cluster": cluster, "ok": report.ok, "seconds": round(report.seconds, 3),
                         "unavailable": report.unavailable, "warnings": len(report.warnings),
                         "unchanged": report.unchanged, "collected": report.collected})

