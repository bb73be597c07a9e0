"""A cluster the portal cannot reach reports itself: the in-cluster agent and its snapshots.

The agent (`manage.py agent`) runs inside the cluster with its own service account and reads
exactly what a poll reads, through the same source (`KubeSource`) and the same walk over the
capabilities (`gitops.listing.list_capabilities`). It does not run the collectors: it records
every list call's answer — the objects, or the error the API server gave — and pushes that
record, gzip-compressed, to the portal. The portal replays the record as a source
(`ReplaySource`) through the ordinary poll, so a pushed cluster is stored exactly as a polled
one: the same collectors, the same store and StateChange rows, the same "unavailable: no
permission to list …" per capability, the same "stale since …" when the read failed.

Why a record of list calls and not the collected rows: the collectors and the store keep
changing with the portal; an agent image one release behind still sends lists the API server
wrote, which the portal of the day reads as it reads any cluster. It also keeps the agent free
of database and catalog knowledge (it knows only its cluster's name and the portal's URL).

Each snapshot carries a sequence (the nanosecond clock when its read began); the portal stores
a snapshot only if its sequence is newer than the last one stored with that token, so a
replayed or delayed old snapshot can never overwrite newer data. When the portal cannot be
reached the agent retries with exponential backoff and jitter, and keeps only the newest
snapshot: a read made while an older one waits replaces it.
"""

from __future__ import annotations

import gzip
import json
import logging
import random
import threading
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import requests

from gitops.kinds import KindSpec
from gitops.sources.base import MALFORMED, REASONS, SERVER_ERROR, ClusterSource, ListResult, SourceError
from gitops.sources.decoding import holds_cut, load_json, too_deep_warning

log = logging.getLogger(__name__)

FORMAT = "gitops-portal-agent-snapshot/v1"
SEQUENCE_HEADER = "X-Portal-Agent-Sequence"
DEFAULT_MAX_SNAPSHOT_BYTES = 256 * 1024 * 1024  # decompressed; a 4,000-app hub is ~25 MB


def _call_key(kind: KindSpec, namespace: str | None) -> str:
    return f"{kind.resource}|{namespace or ''}"


class RecordingSource:
    """A source that answers through another and remembers every answer, errors included."""

    def __init__(self, source: ClusterSource) -> None:
        self._source = source
        self.calls: dict[str, dict[str, Any]] = {}
        capabilities = getattr(source, "capabilities", None)
        if capabilities is not None:
            self.capabilities = capabilities

    @property
    def name(self) -> str:
        return self._source.name

    def list_objects(self, kind: KindSpec, *, namespace: str | None = None) -> ListResult:
        key = _call_key(kind, namespace)
        try:
            result = self._source.list_objects(kind, namespace=namespace)
        except SourceError as exc:
            self.calls[key] = {"error": {"reason": exc.reason, "message": exc.message, "status": exc.status}}
            raise
        self.calls[key] = {
            "items": result.items, "warnings": result.warnings, "version": result.version,
            "resource_version": result.resource_version,
        }
        return result


def read_snapshot(cluster: str, source: ClusterSource, *, sequence: int | None = None,
                  argocd_namespace: str = "argocd") -> dict[str, Any]:
    """One read of the cluster, as the poll would make it, recorded for pushing: every kind,
    then Argo CD's argocd-cm and the custom kinds its health rules cover. (The custom kinds of
    rules an admin writes on the portal are not known here: for a pushed cluster those say
    "not reported by the agent".) `argocd_namespace` must be the one the portal's Argo CD
    instance names, where the cluster Secrets and argocd-cm live."""
    from gitops.listing import PortalRules, list_capabilities, read_health_inputs  # the one walk over the kinds

    sequence = sequence if sequence is not None else time.time_ns()
    recording = RecordingSource(source)
    listing = list_capabilities(recording, argocd_namespace=argocd_namespace)
    if listing.fatal is None and listing.objects.get("Application"):
        read_health_inputs(recording, listing, [argocd_namespace], PortalRules())
    return {"format": FORMAT, "cluster": cluster, "sequence": sequence, "calls": recording.calls}


def encode(snapshot: dict[str, Any]) -> bytes:
    """The snapshot as gzip'd JSON, its text as UTF-8 rather than \\u escapes: smaller, and the
    portal walks a snapshot's every string (gitops.rawobjects.storable_text) only when its text holds
    an escape that may be NUL or a surrogate, which escaped emoji or Hangul would always be."""
    try:
        text = json.dumps(snapshot, separators=(",", ":"), ensure_ascii=False).encode()
    except UnicodeEncodeError:  # a lone surrogate no source let through: escaped, the portal replaces it
        text = json.dumps(snapshot, separators=(",", ":")).encode()
    return gzip.compress(text, compresslevel=6)


class SnapshotError(ValueError):
    """A pushed body the portal will not store; `status` is the HTTP answer it gets."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def decode(chunks: Iterable[bytes], *, limit: int = DEFAULT_MAX_SNAPSHOT_BYTES) -> dict[str, Any]:
    """A pushed body (gzip) back to a snapshot, never inflating more than `limit` bytes."""
    return decode_body(chunks, limit=limit)[0]


def decode_body(chunks: Iterable[bytes], *, limit: int = DEFAULT_MAX_SNAPSHOT_BYTES) -> tuple[dict[str, Any], bool]:
    """A pushed body (gzip) back to a snapshot, and whether parts nested too deep were cut out of
    it (only then may an object hold a cut part: `ReplaySource(..., cut=...)`).

    Decoded with the sources' bounded JSON reader: the objects came from a cluster and are as
    untrusted as a list page read directly. The garbage collector is paused while it runs: a
    decoded JSON document holds no reference cycles, so a collection has nothing to free in it,
    and left on it walks the growing document again and again (most of the decoding's cost for
    a whole cluster's snapshot in one document)."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    parts: list[bytes] = []
    size = 0
    try:
        for chunk in chunks:
            while chunk:
                part = inflater.decompress(chunk, limit + 1 - size)
                size += len(part)
                parts.append(part)
                if size > limit:
                    raise SnapshotError(413, f"snapshot larger than {limit:,} bytes uncompressed")
                chunk = inflater.unconsumed_tail
        tail = inflater.flush()
    except zlib.error as exc:
        raise SnapshotError(400, f"snapshot is not gzip data ({exc})") from None
    if size + len(tail) > limit:
        raise SnapshotError(413, f"snapshot larger than {limit:,} bytes uncompressed")
    if not inflater.eof:
        raise SnapshotError(400, "snapshot ends before its gzip stream does")
    try:
        snapshot, cut = load_json(b"".join(parts) + tail)
    except (UnicodeDecodeError, ValueError) as exc:
        raise SnapshotError(400, f"snapshot is not JSON ({exc})") from None
    if not isinstance(snapshot, dict) or snapshot.get("format") != FORMAT:
        raise SnapshotError(400, f"not a {FORMAT} document")
    if not isinstance(snapshot.get("calls"), dict) or not isinstance(snapshot.get("sequence"), int):
        raise SnapshotError(400, "snapshot lacks its calls or sequence")
    if not isinstance(snapshot.get("cluster"), str):
        raise SnapshotError(400, "snapshot does not name its cluster")
    return snapshot, cut


class ReplaySource:
    """The cluster as its agent read it: each list call answered from the snapshot.

    `cut`: whether decoding cut parts nested too deep out of the snapshot (`decode_body`); only
    then is each object walked for one, as a list page read directly is. Without a cut no value
    can be the marker: the decoder replaced every NUL, which the marker begins with."""

    def __init__(self, name: str, snapshot: dict[str, Any], *, cut: bool = True) -> None:
        self._name = name
        self._calls: dict[str, Any] = snapshot["calls"]
        self._cut = cut

    @property
    def name(self) -> str:
        return self._name

    def list_objects(self, kind: KindSpec, *, namespace: str | None = None) -> ListResult:
        what = f"{kind.resource} (as the agent read it)"
        call = self._calls.get(_call_key(kind, namespace))
        if not isinstance(call, dict):
            # An agent of another release may not read a kind this portal reads: only that kind
            # is "not updated", as after any failed list.
            raise SourceError(SERVER_ERROR, f"{kind.resource}: the agent did not report it (an older agent?)", None)
        error = call.get("error")
        if isinstance(error, dict):
            reason = error.get("reason")
            status = error.get("status")
            raise SourceError(
                reason if reason in REASONS else MALFORMED,
                str(error.get("message") or "the agent's read failed")[:2000],
                status if isinstance(status, int) else None,
            )
        items = call.get("items")
        if not isinstance(items, list):
            raise SourceError(MALFORMED, f"{what}: `items` is not a list", None)
        kept, warnings = [], [str(w)[:1000] for w in call.get("warnings") or [] if isinstance(w, str)]
        for item in items:
            if not isinstance(item, dict):
                warnings.append(f"{what}: an item that is not an object was skipped")
            elif self._cut and holds_cut(item):
                warnings.append(too_deep_warning(what, item))
            else:
                kept.append(item)
        version = call.get("version")
        resource_version = call.get("resource_version")
        return ListResult(
            items=kept, warnings=warnings, pages=0,
            version=version if isinstance(version, str) else None,
            resource_version=resource_version if isinstance(resource_version, str) else None,
        )


# ------------------------------------------------------------------------------ the agent


@dataclass(frozen=True)
class PushOutcome:
    stored: bool
    retry: bool  # worth sending again (the portal was unreachable or failing)
    stop: bool  # the token is refused: this agent must stop
    message: str


class AgentStopped(Exception):
    """The portal refused this agent's token (revoked, or not for this cluster)."""


class Agent:
    """Reads its cluster every `interval` seconds and pushes the newest snapshot."""

    def __init__(
        self, cluster: str, portal_url: str, token: str, source_factory: Callable[[], ClusterSource], *,
        interval: float = 60.0, timeout: float = 30.0, max_backoff: float = 300.0, verify: bool | str = True,
        session: requests.Session | None = None, rng: Callable[[], float] = random.random,
        argocd_namespace: str = "argocd", alive: Callable[[], None] | None = None,
    ) -> None:
        self.argocd_namespace = argocd_namespace
        # Called whenever the loop turns (a read begins, a push was answered or gave up): the
        # liveness signal. A read or push that hangs stops calling it, and only then does the
        # orchestrator restart the agent; an unreachable portal does not (a restart cures nothing).
        self._alive = alive or (lambda: None)
        self.cluster = cluster
        self.url = f"{portal_url.rstrip('/')}/api/v1/agents/{cluster}/snapshots"
        self._token = token
        self._source_factory = source_factory
        self.interval = interval
        self.timeout = timeout
        self.max_backoff = max_backoff
        self.verify = verify
        self._session = session or requests.Session()
        self._rng = rng
        self.pushed = 0  # snapshots the portal stored

    def read(self) -> dict[str, Any]:
        source = self._source_factory()
        try:
            return read_snapshot(self.cluster, source, argocd_namespace=self.argocd_namespace)
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()

    def push(self, snapshot: dict[str, Any]) -> PushOutcome:
        body = encode(snapshot)
        headers = {
            "Authorization": f"Bearer {self._token}", "Content-Type": "application/json",
            "Content-Encoding": "gzip", SEQUENCE_HEADER: str(snapshot["sequence"]),
        }
        try:
            # With a Content-Length: WSGI servers need not accept a chunked request body.
            response = self._session.post(self.url, data=body, headers=headers, timeout=self.timeout,
                                          verify=self.verify)
        except requests.RequestException as exc:
            return PushOutcome(False, True, False, f"portal unreachable: {type(exc).__name__}")
        text = _answer(response)
        if response.status_code < 300:
            return PushOutcome(True, False, False, text)
        if response.status_code in (401, 403):
            return PushOutcome(False, False, True, f"token refused ({response.status_code}): {text}")
        if response.status_code in (409, 413, 400):
            # An older snapshot than one already stored, or one the portal will never take: drop it.
            return PushOutcome(False, False, False, f"snapshot refused ({response.status_code}): {text}")
        return PushOutcome(False, True, False, f"portal answered {response.status_code}: {text}")

    def backoff(self, attempt: int) -> float:
        """Seconds before the attempt-th retry: exponential, capped, with full jitter in its upper half."""
        ceiling = min(self.max_backoff, 2.0 ** min(attempt, 16))
        return ceiling / 2 + self._rng() * ceiling / 2

    def run(self, stop: threading.Event | None = None, *, iterations: int | None = None) -> None:
        """Read and push until `stop` is set (or `iterations` reads were made)."""
        stop = stop or threading.Event()
        reads = 0
        while not stop.is_set() and (iterations is None or reads < iterations):
            started = time.monotonic()
            self._alive()
            try:
                pending = self.read()
            except Exception as exc:  # noqa: BLE001 - a failed read is reported by the next one
                log.warning("agent %s: read failed: %s: %s", self.cluster, type(exc).__name__, exc)
                stop.wait(self.interval)
                continue
            reads += 1
            next_read = started + self.interval
            attempt = 0
            while not stop.is_set():
                outcome = self.push(pending)
                self._alive()
                if outcome.stop:
                    log.error("agent %s stops: %s", self.cluster, outcome.message)
                    raise AgentStopped(outcome.message)
                if outcome.stored:
                    self.pushed += 1
                    break
                if not outcome.retry:
                    log.warning("agent %s: %s", self.cluster, outcome.message)
                    break
                attempt += 1
                wait = self.backoff(attempt)
                log.warning("agent %s: %s; retrying in %.1f s", self.cluster, outcome.message, wait)
                if time.monotonic() + wait >= next_read:
                    # Keep only the newest snapshot: the next read replaces this one.
                    break
                stop.wait(wait)
            if iterations is not None and reads >= iterations:
                break
            stop.wait(max(0.0, next_read - time.monotonic()))


def _answer(response: requests.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.reason or ""
    return str(data.get("detail") or data.get("message") or "")[:300] if isinstance(data, dict) else ""
