"""`/metrics`: the portal's Prometheus series, in the text format, from the web process.

What the processes counted (polls, forge requests, pull requests, notifications, agent pushes,
page latency: `portal.kernel.metrics`) is read from the multiprocess folder every process of
this machine or pod writes into (prometheus-client's `MultiProcessCollector`). What is a state
rather than an event is computed at the scrape, so it is right whichever process answers:

- each enabled cluster's age of its last good poll, from its ClusterPoll row (one query);
- each queue's depth: Redis LLEN over the queue's priority lists (one pipelined round trip,
  bounded by a socket timeout), or the filesystem broker's message files counted.

Prometheus scrapes a pod by its address, which no ALLOWED_HOSTS lists (the kubelet's probes can
send a Host header; a ServiceMonitor cannot), so `MetricsEndpointMiddleware`, first in the chain,
answers /metrics before anything asks the request's host. No login, no session (a scraper has
neither); `PORTAL_METRICS_ENABLED=0` answers 404, and
`PORTAL_METRICS_TOKEN` makes it answer only a scraper that sends that token as a Bearer. The
answer names no URL, app, error text or secret: only the bounded labels the series declare.
"""

from __future__ import annotations

import hmac
import logging
import os
from collections.abc import Callable, Iterable, Iterator

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector

from portal.kernel.catalog.models import Cluster
from portal.kernel.metrics import CLUSTER_LAST_OK_AGE, CLUSTER_NEVER_OK, QUEUE_DEPTH

log = logging.getLogger(__name__)

BROKER_TIMEOUT = 2.0  # seconds for the queue-depth round trip; a scrape must not hang on Redis
# kombu's Redis transport keeps a queue's messages of priority p > 0 in "<queue>\x06\x16<p>".
REDIS_PRIORITY_SEPARATOR = "\x06\x16"
REDIS_PRIORITY_STEPS = (0, 3, 6, 9)


def cluster_ages() -> Iterator[Metric]:
    now = timezone.now()
    age = GaugeMetricFamily(CLUSTER_LAST_OK_AGE, "Seconds since the cluster's last good poll.", labels=["cluster"])
    never = GaugeMetricFamily(CLUSTER_NEVER_OK, "1 when the cluster was never polled well.", labels=["cluster"])
    for name, last_ok in Cluster.objects.filter(enabled=True).values_list("name", "poll__last_ok_at"):
        never.add_metric([name], 0.0 if last_ok else 1.0)
        if last_ok is not None:
            age.add_metric([name], max(0.0, (now - last_ok).total_seconds()))
    yield age
    yield never


def _redis_depths(queues: Iterable[str]) -> dict[str, int]:
    import redis  # the Redis broker's own client, only needed there

    client = redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=BROKER_TIMEOUT,
                                  socket_connect_timeout=BROKER_TIMEOUT)
    try:
        pipeline = client.pipeline(transaction=False)
        names = list(queues)
        for queue in names:
            for step in REDIS_PRIORITY_STEPS:
                pipeline.llen(queue if step == 0 else f"{queue}{REDIS_PRIORITY_SEPARATOR}{step}")
        lengths = pipeline.execute()
    finally:
        client.close()
    steps = len(REDIS_PRIORITY_STEPS)
    return {queue: sum(lengths[i * steps:(i + 1) * steps]) for i, queue in enumerate(names)}


def _folder_depths(queues: Iterable[str]) -> dict[str, int]:
    folder = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("data_folder_in", "")
    depths = dict.fromkeys(queues, 0)
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                # "<stamp>_<uuid>.<queue>.msg" (portal.filebroker); a ".partial" is not a message yet.
                parts = entry.name.split(".")
                if len(parts) == 3 and parts[2] == "msg" and parts[1] in depths:
                    depths[parts[1]] += 1
    except FileNotFoundError:
        return depths  # no message was ever sent: the broker makes its folders on first use
    except OSError:
        return {}
    return depths


def queue_depths() -> Iterator[Metric]:
    depth = GaugeMetricFamily(QUEUE_DEPTH, "Messages waiting in each Celery queue.", labels=["queue"])
    try:
        if settings.BROKER_IS_REDIS:
            depths = _redis_depths(settings.PORTAL_QUEUES)
        elif settings.CELERY_BROKER_URL.startswith("filesystem://"):
            depths = _folder_depths(settings.PORTAL_QUEUES)
        else:
            depths = {}
    except Exception as error:  # the broker's own errors, of many kinds: the scrape goes on without them
        log.warning("metrics: queue depths unreadable: %s", type(error).__name__)
        depths = {}
    for queue, count in depths.items():
        depth.add_metric([queue], float(count))
    yield depth


class StateCollector:
    """The series computed at each scrape from the database and the broker."""

    def collect(self) -> Iterator[Metric]:
        yield from cluster_ages()
        yield from queue_depths()


class _ThisProcess:
    """This process's own series, when there is no multiprocess folder to add up."""

    def collect(self) -> Iterator[Metric]:
        for metric in REGISTRY.collect():
            if metric.name.startswith("portal_"):
                yield metric


def exposition() -> bytes:
    registry = CollectorRegistry()
    if settings.PORTAL_METRICS_MULTIPROCESS:
        MultiProcessCollector(registry, path=str(settings.PROMETHEUS_MULTIPROC_DIR))
    else:
        registry.register(_ThisProcess())
    registry.register(StateCollector())
    return generate_latest(registry)


def _allowed(request: HttpRequest) -> bool:
    expected = settings.PORTAL_METRICS_TOKEN
    if not expected:
        return True
    scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(presented.strip().encode(), expected.encode())


@never_cache
@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    if not settings.PORTAL_METRICS_ENABLED:
        raise Http404
    if not _allowed(request):
        response = HttpResponse("a metrics token is required\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)


class MetricsEndpointMiddleware:
    """/metrics answered before the host is checked (see above); every other path goes on."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info == "/metrics":
            try:
                return metrics(request)
            except Http404:
                return HttpResponse("not found\n", status=404, content_type="text/plain")
        return self.get_response(request)
