"""The portal's Prometheus series, defined once where every layer may import them.

prometheus-client in multiprocess mode, not django-prometheus: the series that matter are
written by Celery's prefork workers (polls, forge calls, PRs, notifications) and by gunicorn's
workers, each its own process, and only multiprocess mode adds them up across processes.
django-prometheus brings request and model metrics nobody here alerts on, and in multiprocess
mode it relies on the same prometheus-client machinery anyway. Each process writes its values to
memory-mapped files in `settings.PROMETHEUS_MULTIPROC_DIR` (an emptyDir per pod in the chart,
`var/metrics` in the embedded run, wiped at start); a scrape reads them all (portal/scrape.py).
settings.py sets the variable prometheus-client reads before any series is made. No gunicorn or
Celery hook marks a process dead: no series here is a "live" gauge, so an exited process's files
stay counted, as a counter's past must (the rate-limit gauge keeps the most recent value written).

Labels are bounded: a cluster's name (the catalog bounds them), a forge host (the configured
forges), a status class, a kind, a channel kind, a view name. Never a URL, an app, an error
message or a token: `reason_of` and `status_class` fold anything else into a fixed set.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

# Seconds, from a quick unchanged poll to a slow full read of a large cluster.
POLL_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300)
PAGE_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)

POLL_SECONDS = Histogram(
    "portal_poll_duration_seconds", "How long a cluster's poll took, ok or not.", ["cluster"], buckets=POLL_BUCKETS
)
POLL_FAILURES = Counter(
    "portal_poll_failures_total", "Polls that could not read their cluster, by reason.", ["cluster", "reason"]
)
POLL_SKIPPED = Counter(
    "portal_poll_skipped_total", "Polls that did not read their cluster, by why: another worker was polling it "
    "(locked) or the portal does not read it itself (not_read_here).", ["reason"],
)
SKIPPED_LOCKED, SKIPPED_NOT_READ_HERE = "locked", "not_read_here"  # every `reason` POLL_SKIPPED carries
POLL_INTERRUPTED = Counter(
    "portal_poll_interrupted_total", "Polls that took over a cluster whose previous poll never ended (its worker "
    "died mid-poll): each is one interruption recovered.", ["cluster"],
)
FORGE_REQUESTS = Counter(
    "portal_forge_requests_total", "HTTP requests to forges, retries included, by host and status class.",
    ["host", "status"],
)
FORGE_RATE_LIMIT_REMAINING = Gauge(
    "portal_forge_rate_limit_remaining", "Requests left in the forge's rate-limit window, as it last said.",
    ["host"], multiprocess_mode="mostrecent",
)
PULL_REQUESTS = Counter(
    "portal_pull_requests_total",
    "Pull requests the portal opened, failed to open, or refused to open (outcome), by kind.",
    ["kind", "outcome"],
)
NOTIFICATIONS = Counter(
    "portal_notifications_total", "Notifications sent or failed, by channel kind.", ["channel", "outcome"]
)
AGENT_PUSHES = Counter(
    "portal_agent_pushes_total", "Snapshots pushed by in-cluster agents, by the answer's status class.", ["status"]
)
PAGE_SECONDS = Histogram(
    "portal_page_duration_seconds", "How long the web took to answer, by view name.", ["view"], buckets=PAGE_BUCKETS
)

# What the scrape computes (portal/scrape.py): named here so the chart's rules and dashboard
# have one list of every series the portal exports.
CLUSTER_LAST_OK_AGE = "portal_cluster_last_ok_age_seconds"
CLUSTER_NEVER_OK = "portal_cluster_never_ok"
QUEUE_DEPTH = "portal_queue_depth"

OK, FAILED = "ok", "failed"
OTHER = "other"


def status_class(status: int | None) -> str:
    """"2xx" … "5xx", or "error" when no answer came (a connection error)."""
    if status is None or not 100 <= status <= 599:
        return "error"
    return f"{status // 100}xx"


def reason_of(error: str, reasons: frozenset[str]) -> str:
    """The reason word an error starts with ("timeout: …"), when it is one of `reasons`; else "other"."""
    head = error.split(":", 1)[0].strip()
    return head if head in reasons else OTHER


def rate_limit_remaining(headers: object) -> float | None:
    """The remaining count a forge's answer states (GitHub's and Gitea's X-RateLimit-Remaining,
    GitLab's RateLimit-Remaining), or None."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    for name in ("X-RateLimit-Remaining", "RateLimit-Remaining", "x-ratelimit-remaining", "ratelimit-remaining"):
        value = get(name)
        if value is not None and str(value).strip().isdigit():
            return float(str(value).strip())
    return None


def forge_answered(host: str, status: int | None, headers: object = None) -> None:
    """One forge request done: counted by host and status class, its rate-limit remaining kept."""
    host = host.lower() or "unknown"
    FORGE_REQUESTS.labels(host=host, status=status_class(status)).inc()
    remaining = rate_limit_remaining(headers)
    if remaining is not None:
        FORGE_RATE_LIMIT_REMAINING.labels(host=host).set(remaining)
