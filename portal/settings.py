"""Settings, all from the environment (12-factor), with embedded defaults.

With no variables set the portal runs on SQLite and a Celery broker that needs no
server (kombu's filesystem transport), so `make run` works on a bare machine.
Production sets DATABASE_URL (PostgreSQL) and REDIS_URL / CELERY_BROKER_URL.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from kombu import Exchange, Queue

from portal.settingvalues import base_url_of_address, osv_offline_sources, team_groups

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("PORTAL_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if not value:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]




DEBUG = env_bool("DEBUG", False)
# Demo mode is the embedded `make run`: it may create a local admin and refuses forge writes. Production never sets it.
DEMO_MODE = env_bool("PORTAL_DEMO", False)
# The embedded run (`make run`): where it serves, and the local demo admin it creates.
PORTAL_ADDRESS = os.environ.get("PORTAL_ADDRESS", "127.0.0.1:8000")
PORTAL_DEMO_ADMIN = os.environ.get("PORTAL_DEMO_ADMIN", "admin")
PORTAL_DEMO_PASSWORD = os.environ.get("PORTAL_DEMO_PASSWORD", "admin")

# Production (PORTAL_PRODUCTION=1, as docker-compose.yml sets it) refuses to start
# without a real key; the embedded run and tests use a fixed local-only key.
PRODUCTION = env_bool("PORTAL_PRODUCTION", False)
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if PRODUCTION:
        raise ImproperlyConfigured("SECRET_KEY must be set when PORTAL_PRODUCTION=1")
    SECRET_KEY = "insecure-local-only-key-not-for-production"  # noqa: S105 - embedded default only

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI for /api/docs, served locally
    # kernel
    "portal.kernel.catalog",
    "portal.kernel.accounts",
    "portal.kernel.audit",
    "portal.kernel.changelog",  # the data revision shared pages are kept by (portal/web/sharedpages.py)
    # reading clusters / talking to forges
    "gitops",
    "forges",
    # what upstream offers, then turning gaps into pull requests
    "portal.releases",
    "portal.delivery",
    # GitOps discipline findings, combining what the layers above and below know
    "portal.findings",
    # pages, API, notifications
    "portal.web",
    "portal.api",  # also MCP: the read-only assistant endpoint (portal.api.mcp) and `manage.py mcp`
    "portal.notifications",
]

MIDDLEWARE = [
    # First, so that every log line of a request carries its id (portal/requestids.py).
    "portal.requestids.RequestIdMiddleware",
    # /metrics before any host check: Prometheus scrapes pods by address (portal/scrape.py).
    "portal.scrape.MetricsEndpointMiddleware",
    # Before the rest, so a page's latency includes every middleware below (portal/web/pagelatency.py).
    "portal.web.pagelatency.PageLatencyMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Serves static/ under gunicorn in production; runserver serves it itself in DEBUG.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "portal.web.timezones.ViewerTimezoneMiddleware",
]

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "portal.web.context.portal_context",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'portal.sqlite3'}"),
        conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "60")),
        # A kept connection may have been dropped by the server (a restart, a failover): checked
        # once when a request or a task first uses it, and opened anew if so.
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    VAR_DIR.mkdir(parents=True, exist_ok=True)  # the embedded default lives in var/
    # Several processes (web + worker) share the file: wait for locks instead of failing.
    # IMMEDIATE: a transaction takes the write lock when it begins, so two that read then
    # write never deadlock on the upgrade (which SQLite answers with "locked" at once).
    DATABASES["default"].setdefault("OPTIONS", {}).update(timeout=20, transaction_mode="IMMEDIATE")
    # Tests on a file too: an in-memory database shares one cache, whose table locks make a
    # concurrent writer fail at once ("database table is locked") instead of waiting.
    DATABASES["default"].setdefault("TEST", {}).setdefault("NAME", str(VAR_DIR / f"test-{os.getpid()}.sqlite3"))
    DATABASES["default"]["CONN_MAX_AGE"] = 0

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Django's users and passwords, refused everywhere (admin included) when PORTAL_LOCAL_LOGIN is off.
AUTHENTICATION_BACKENDS = ["portal.kernel.accounts.localpasswords.LocalPasswordBackend"]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "overview"
LOGOUT_REDIRECT_URL = "login"

# --- Sign-in through the company's identity provider (portal/kernel/accounts/oidc.py) -------
# OpenID Connect with discovery: the issuer's /.well-known/openid-configuration names every
# endpoint. Empty issuer: OIDC off, local users only (the embedded run). The client secret is read
# here only and never rendered or logged. The groups claim picks the portal role at each sign-in:
# admin groups > member groups > viewer groups (comma lists of the provider's group names).
PORTAL_OIDC_ISSUER = os.environ.get("PORTAL_OIDC_ISSUER", "").strip().rstrip("/")
PORTAL_OIDC_CLIENT_ID = os.environ.get("PORTAL_OIDC_CLIENT_ID", "")
PORTAL_OIDC_CLIENT_SECRET = os.environ.get("PORTAL_OIDC_CLIENT_SECRET", "")
PORTAL_OIDC_NAME = os.environ.get("PORTAL_OIDC_NAME", "").strip() or "single sign-on"
PORTAL_OIDC_SCOPES = os.environ.get("PORTAL_OIDC_SCOPES", "").strip() or "openid email profile groups"
PORTAL_OIDC_GROUPS_CLAIM = os.environ.get("PORTAL_OIDC_GROUPS_CLAIM", "").strip() or "groups"
PORTAL_OIDC_ADMIN_GROUPS = env_list("PORTAL_OIDC_ADMIN_GROUPS", [])
PORTAL_OIDC_MEMBER_GROUPS = env_list("PORTAL_OIDC_MEMBER_GROUPS", [])
PORTAL_OIDC_VIEWER_GROUPS = env_list("PORTAL_OIDC_VIEWER_GROUPS", [])
PORTAL_OIDC_TIMEOUT = float(os.environ.get("PORTAL_OIDC_TIMEOUT", "10"))  # seconds per request to the provider
# The username/password form: on by default (the embedded run, and a break-glass account when the
# provider is down); production signing in through the provider only sets PORTAL_LOCAL_LOGIN=0.
PORTAL_LOCAL_LOGIN = env_bool("PORTAL_LOCAL_LOGIN", True)
if PORTAL_OIDC_ISSUER and not PORTAL_OIDC_CLIENT_ID:
    raise ImproperlyConfigured("PORTAL_OIDC_ISSUER is set: PORTAL_OIDC_CLIENT_ID must be set too")
if PORTAL_OIDC_ISSUER and "openid" not in PORTAL_OIDC_SCOPES.split():
    raise ImproperlyConfigured("PORTAL_OIDC_SCOPES must include openid: without it no ID token says who signed in")
if not PORTAL_LOCAL_LOGIN and not PORTAL_OIDC_ISSUER:
    raise ImproperlyConfigured("PORTAL_LOCAL_LOGIN=0 leaves no way to sign in without PORTAL_OIDC_ISSUER")

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
# Outside production whitenoise serves straight from static/ (no collectstatic step).
WHITENOISE_USE_FINDERS = not PRODUCTION


# --- Team ownership (portal.kernel.accounts.teams) ----------------------------
# PORTAL_OIDC_TEAM_GROUPS maps identity-provider groups to teams, "idp-group=team" pairs
# separated by commas ("payments-devs=payments,sre=platform"); each sign-in refreshes a user's
# teams from it. Only listed groups map: a group named like a team is not a team by itself.
PORTAL_OIDC_TEAM_GROUPS = team_groups(os.environ.get("PORTAL_OIDC_TEAM_GROUPS", ""))
# On: a member acts (opens pull requests, puts off, mutes) only on services of their teams.
PORTAL_TEAM_SCOPED_ACTIONS = env_bool("PORTAL_TEAM_SCOPED_ACTIONS", False)

# --- HTTPS (`manage.py check --deploy` is clean in production) ------------------
# Production defaults to HTTPS only: plain HTTP is redirected, cookies are Secure, and browsers are
# told to use HTTPS for a year (HSTS, sent on HTTPS responses only). The embedded run (not
# PORTAL_PRODUCTION) keeps plain HTTP on 127.0.0.1. Behind a proxy or an ingress that ends TLS,
# set PORTAL_TLS_PROXY=1 so its X-Forwarded-Proto says the request was HTTPS (only there: a
# client reaching the portal directly could claim it). A production install served over plain
# HTTP on purpose (docker-compose.yml on one machine) sets SECURE_SSL_REDIRECT=0 and
# SESSION_COOKIE_SECURE=0.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", PRODUCTION)
# The orchestrator's probes and the metrics scraper speak plain HTTP to the pod itself.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
if env_bool("PORTAL_TLS_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", PRODUCTION)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", str(365 * 86400) if PRODUCTION else "0"))
# Whether HSTS covers every subdomain, and the browsers' preload list, are the domain owner's
# decision, not one application's: off unless set, and their deploy checks silenced.
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SILENCED_SYSTEM_CHECKS = ["security.W005", "security.W021"]

# --- Cache and Celery -------------------------------------------------------
REDIS_URL = os.environ.get("REDIS_URL", "")
# CACHE_URL (a Redis database of its own, e.g. redis://redis:6379/1) shares the cache —
# API rate limits — between web workers; without it each process keeps its own in memory.
CACHE_URL = os.environ.get("CACHE_URL", "")
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}
    if CACHE_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    # Page bodies the same for every viewer until the data changes (portal/web/sharedpages.py):
    # shared by every web process through Redis, else kept per process, a few hundred at most.
    "pages": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL,
              "KEY_PREFIX": "pages"}
    if CACHE_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "pages",
          "OPTIONS": {"MAX_ENTRIES": 300}},
}
BROKER_DIR = VAR_DIR / "broker"
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or REDIS_URL or "filesystem://"
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND") or (
    REDIS_URL if REDIS_URL else f"file://{VAR_DIR / 'results'}"
)
CELERY_BROKER_TRANSPORT_OPTIONS: dict = {}
BROKER_IS_REDIS = CELERY_BROKER_URL.startswith(("redis://", "rediss://"))
if CELERY_BROKER_URL.startswith("filesystem://"):
    # kombu's filesystem transport with whole messages only (see portal/filebroker.py).
    CELERY_BROKER_TRANSPORT = "portal.filebroker:Transport"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        # Broadcasts (worker control) go here too instead of ./control.
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
    }
elif BROKER_IS_REDIS:
    # A worker consuming several queues asks Redis for them in the order its -Q lists them
    # (BRPOP tries the keys in order) instead of kombu's default round robin.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"queue_order_strategy": "priority"}
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
# No task's return value is read back (each writes what it found to the store), so none is
# kept: 500 clusters polled every minute would otherwise leave 720,000 results a day in Redis.
# A task whose caller waits for its answer says so itself (portal.ping).
CELERY_TASK_IGNORE_RESULT = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Celery's Django fixup closes every database connection before and after each task unless this
# is set (celery.fixups.django): at 500 polls a minute that is 8 new PostgreSQL sessions a second,
# each a forked backend whose caches start cold. With it, the fixup recycles a process's
# connections only every this many tasks; between those, portal.celery closes them at task
# boundaries as Django does at request boundaries (CONN_MAX_AGE, errors, health checks).
CELERY_DB_REUSE_MAX = 1000

# Queues. Polls, forge work, registry work and notifications each have their own, and the
# worker command lines (docker-compose.yml, portal/embedded.py, the README) run polls in a
# worker of their own: a queue only orders messages, it cannot stop a worker process that is
# busy with a forge task (a rate-limit wait may hold it for minutes) from making a poll wait,
# so the guarantee that a forge backlog never delays a poll comes from separate processes.
# The other worker consumes `notify,registry,forge` in that order (Redis: the priority strategy
# above) and takes a message only when a process is free (prefetch disabled), so a
# notification waits for at most the task already running, never for the backlog.
POLL_QUEUE, NOTIFY_QUEUE, REGISTRY_QUEUE, FORGE_QUEUE = "poll", "notify", "registry", "forge"
PORTAL_QUEUES = (POLL_QUEUE, NOTIFY_QUEUE, REGISTRY_QUEUE, FORGE_QUEUE)
# Each bound to an exchange of its own name (unnamed, Celery would bind all four to the default one).
CELERY_TASK_QUEUES = [Queue(name, Exchange(name), routing_key=name) for name in PORTAL_QUEUES]
# Anything not routed below (housekeeping that reads only the store) goes with notifications.
CELERY_TASK_DEFAULT_QUEUE = NOTIFY_QUEUE
CELERY_TASK_ROUTES = {
    "gitops.*": {"queue": POLL_QUEUE},
    "releases.*": {"queue": REGISTRY_QUEUE},
    # The pins fan-out waits behind forge work on purpose: while the forge worker is behind,
    # it queues nothing more (its tick expires), and the reads already queued are claimed.
    "delivery.read_due_git_pins": {"queue": FORGE_QUEUE},
    "delivery.read_repository_pins": {"queue": FORGE_QUEUE},
    "delivery.read_git_pins": {"queue": FORGE_QUEUE},
    "delivery.track_pull_requests": {"queue": FORGE_QUEUE},
    "delivery.track_pull_request": {"queue": FORGE_QUEUE},
    "delivery.open_automatic_prs": {"queue": FORGE_QUEUE},
    "delivery.scan_outside_prs": {"queue": FORGE_QUEUE},
    "delivery.summarise_release_notes": {"queue": FORGE_QUEUE},  # an outside endpoint, slow: forge work
    "delivery.open_pull_request": {"queue": FORGE_QUEUE},
    "delivery.reconcile_pull_requests": {"queue": FORGE_QUEUE},
    "delivery.preview_pull_requests": {"queue": FORGE_QUEUE},
    "delivery.*": {"queue": NOTIFY_QUEUE},
    "notifications.*": {"queue": NOTIFY_QUEUE},
}
# One message reserved per free process, none held behind a busy one.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_WORKER_DISABLE_PREFETCH = BROKER_IS_REDIS  # Celery supports it on Redis only (and warns elsewhere)
# A pool process whose peak RSS passed this (MB; 0: never) is replaced after its task: Python keeps what a large task
# freed, so one read of a 100,000-app fleet would stay with the process for good. Celery counts KiB.
CELERY_WORKER_MAX_MEMORY_PER_CHILD = int(os.environ.get("PORTAL_WORKER_MAX_MEMORY_MB", "300")) * 1024 or None
# A file a worker touches on every event heartbeat (every 2 s while its consumer loop runs), whose
# age the Helm chart's liveness probe checks; empty (the embedded run) touches none.
PORTAL_WORKER_HEARTBEAT_FILE = os.environ.get("PORTAL_WORKER_HEARTBEAT_FILE", "")
# The in-cluster agent's (`manage.py agent`) like file: touched each time its loop turns.
PORTAL_AGENT_HEARTBEAT_FILE = os.environ.get("PORTAL_AGENT_HEARTBEAT_FILE", "")

# --- Prometheus metrics (portal.kernel.metrics, portal/scrape.py) -----------------
# Every process (gunicorn's, Celery's prefork children) writes its series into this folder and
# /metrics adds them up (prometheus-client's multiprocess mode). One folder per machine or pod,
# emptied when the processes start (the embedded run does; the chart mounts an emptyDir). Set
# here, before any series exists, because prometheus-client reads the variable at import.
PROMETHEUS_MULTIPROC_DIR = Path(os.environ.get("PROMETHEUS_MULTIPROC_DIR") or VAR_DIR / "metrics")
try:
    PROMETHEUS_MULTIPROC_DIR.mkdir(parents=True, exist_ok=True)
    PORTAL_METRICS_MULTIPROCESS = True
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(PROMETHEUS_MULTIPROC_DIR)
except OSError:  # nowhere to write (a read-only one-off command): each process counts for itself
    PORTAL_METRICS_MULTIPROCESS = False
    os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
# /metrics answers without a login. Off: 404. With a token set, only a scraper that sends it as
# `Authorization: Bearer <token>` is answered. Default: open (the embedded run, a trusted network).
PORTAL_METRICS_ENABLED = env_bool("PORTAL_METRICS_ENABLED", True)
PORTAL_METRICS_TOKEN = os.environ.get("PORTAL_METRICS_TOKEN", "")
# A Celery worker's own scrape port (its main process serves what its prefork children wrote);
# 0: none. The web's /metrics cannot see a worker pod's folder, so the chart sets it.
PORTAL_METRICS_WORKER_PORT = int(os.environ.get("PORTAL_METRICS_WORKER_PORT", "0"))

# Polling cadence (seconds).
PORTAL_POLL_INTERVAL = int(os.environ.get("PORTAL_POLL_INTERVAL", "60"))
# A poll's own time limits (Celery's, on gitops.poll_cluster): past the soft one it stops and its
# cluster goes stale with a reason; at the hard one its process is killed. A poll's lock never
# lives longer than the hard limit plus one lease (gitops.pollease).
PORTAL_POLL_TIME_LIMIT = float(os.environ.get("PORTAL_POLL_TIME_LIMIT", "300"))
PORTAL_POLL_SOFT_TIME_LIMIT = PORTAL_POLL_TIME_LIMIT * 0.9
# How long a poll's lock and claim outlive its worker: the poll renews both every third of it,
# so a worker killed mid-poll frees its cluster within this many seconds and the next beat tick
# (one interval) queues it again. Shorter than the interval, longer than a database hiccup.
PORTAL_POLL_LEASE_SECONDS = float(os.environ.get("PORTAL_POLL_LEASE_SECONDS", "20"))
# The largest snapshot an in-cluster agent may push, uncompressed (gitops.sources.agent).
PORTAL_AGENT_MAX_SNAPSHOT_BYTES = int(os.environ.get("PORTAL_AGENT_MAX_SNAPSHOT_MB", "256")) * 1024 * 1024
# How long a state must last before it "needs attention" (minutes).
PORTAL_ATTENTION_GRACE_MINUTES = int(os.environ.get("PORTAL_ATTENTION_GRACE_MINUTES", "10"))
# Health Progressing, or an Argo CD sync operation Running, longer than this (minutes) is "stuck progressing".
PORTAL_STUCK_PROGRESSING_MINUTES = int(os.environ.get("PORTAL_STUCK_PROGRESSING_MINUTES", "30"))
PORTAL_ARGOCD_URL = os.environ.get("PORTAL_ARGOCD_URL", "")
# Where people open the portal (the links of notifications and API items); unset, where the embedded run serves.
PORTAL_BASE_URL = os.environ.get("PORTAL_BASE_URL", "").rstrip("/") or base_url_of_address(PORTAL_ADDRESS)
PORTAL_KUBE_TIMEOUT = float(os.environ.get("PORTAL_KUBE_TIMEOUT", "20"))
# Seconds a notification channel (webhook, Slack, Teams, Discord) has to answer.
PORTAL_NOTIFY_TIMEOUT = float(os.environ.get("PORTAL_NOTIFY_TIMEOUT", "10"))
PORTAL_SLACK_API_URL = os.environ.get("PORTAL_SLACK_API_URL", "https://slack.com/api/")  # Slack app channels
# Pull request branches are named <prefix><service>-<version>-<environment> (portal.delivery.planner).
PORTAL_BRANCH_PREFIX = os.environ.get("PORTAL_BRANCH_PREFIX", "portal/")

# --- Forges (forges.hosts) and registries (portal.releases.oci) ----------------
# One base URL per forge kind, for its client. Each also names the host whose repositories
# it serves, and links (commit, compare, repository pages) follow the same hosts, so a
# self-hosted forge is configured once: PORTAL_GITLAB_URL=https://git.corp.example is enough.
PORTAL_GITOPS_GITHUB_API = (os.environ.get("PORTAL_GITOPS_GITHUB_API") or "https://api.github.com").rstrip("/")
PORTAL_GITLAB_URL = (os.environ.get("PORTAL_GITLAB_URL") or "https://gitlab.com").rstrip("/")
PORTAL_GITEA_URL = (os.environ.get("PORTAL_GITEA_URL") or "").rstrip("/")  # Gitea or Forgejo; none by default
# Their tokens, named like the variables (forges.hosts reads the one a forge needs, by that name);
# never rendered, logged or stored anywhere else.
PORTAL_GITOPS_TOKEN = os.environ.get("PORTAL_GITOPS_TOKEN", "")
PORTAL_GITOPS_GITLAB_TOKEN = os.environ.get("PORTAL_GITOPS_GITLAB_TOKEN", "")
PORTAL_GITOPS_GITEA_TOKEN = os.environ.get("PORTAL_GITOPS_GITEA_TOKEN", "")
# Forges the portal only links to, by host: "git.corp.example=gitlab,gitea.corp.example=gitea".
# A forge with a URL above needs no entry here (it used to need both; an entry that repeats it
# still works and changes nothing, so deployments that set both keep working).
PORTAL_FORGE_HOSTS = dict(
    item.split("=", 1) for item in env_list("PORTAL_FORGE_HOSTS", []) if "=" in item
)
# Trees and file texts of commits already read, kept per process (forges.treecache): a commit
# never changes, so a preview of a branch whose head did not move reads no tree again. 0: none kept.
PORTAL_FORGE_TREE_CACHE_BYTES = int(os.environ.get("PORTAL_FORGE_TREE_CACHE_MB", "64")) * 1024 * 1024
# Registry credentials by host, as the names of the variables that hold them:
# "ghcr.io=GHCR_USER:GHCR_TOKEN". The named variables are read when a client is built.
PORTAL_REGISTRY_AUTH = os.environ.get("PORTAL_REGISTRY_AUTH", "")
# Registries reached over plain http (a local registry); every other host is https.
PORTAL_REGISTRY_PLAIN_HTTP = [host.lower() for host in env_list("PORTAL_REGISTRY_PLAIN_HTTP", [])]
PORTAL_REGISTRY_TIMEOUT = float(os.environ.get("PORTAL_REGISTRY_TIMEOUT", "10"))  # seconds per request
# Supply chain (portal.releases.osv, kev): vulnerabilities of SBOM packages from OSV, "exploited"
# from CISA's KEV catalogue. Both are plain HTTPS GET/POST through requests, which honours the
# standard HTTPS_PROXY / NO_PROXY variables: that is the proxy setting.
PORTAL_OSV_URL = os.environ.get("PORTAL_OSV_URL", "https://api.osv.dev").rstrip("/")
PORTAL_OSV_CACHE_HOURS = float(os.environ.get("PORTAL_OSV_CACHE_HOURS", "24"))  # a package version's answer kept
# Air-gapped: OSV's exports (zip paths, directories or URLs) imported and matched instead (releases.osv_offline).
PORTAL_OSV_OFFLINE = osv_offline_sources(os.environ.get("PORTAL_OSV_OFFLINE", ""))
PORTAL_OSV_OFFLINE_REFRESH_HOURS = float(os.environ.get("PORTAL_OSV_OFFLINE_REFRESH_HOURS", "24"))
PORTAL_KEV_URL = os.environ.get(
    "PORTAL_KEV_URL", "https://www.cisa.gov/sites/default/files/feeds/known_exploited_vulnerabilities.json"
)
PORTAL_FEED_TIMEOUT = float(os.environ.get("PORTAL_FEED_TIMEOUT", "30"))  # seconds per OSV or KEV request

# Release-note summaries (portal.releases.summaries), only when all three are set: an
# OpenAI-compatible endpoint (…/v1, or its /chat/completions), the model, and the NAME of the
# environment variable holding its API key (the key itself never sits in settings).
PORTAL_LLM_URL = os.environ.get("PORTAL_LLM_URL", "").rstrip("/")
PORTAL_LLM_MODEL = os.environ.get("PORTAL_LLM_MODEL", "")
PORTAL_LLM_API_KEY_ENV = os.environ.get("PORTAL_LLM_API_KEY_ENV", "")
PORTAL_LLM_TIMEOUT = float(os.environ.get("PORTAL_LLM_TIMEOUT", "60"))  # seconds; a slower answer is a failure

# Beat: one entry per periodic task; most only find what is due and fan out one small task each.
# Every one expires before its next tick: a tick that waited a whole period (a worker down, a
# queue backed up) is dropped for the next one instead of piling up behind it.
PERIODIC_EXPIRY = 0.9  # of the period

# Opening a pull request is a job on the forge queue (portal.delivery.forge_jobs). A run holds its
# row for the lease (renewed at each step); past it, the reconciler (every interval) resumes the
# job, at most ATTEMPTS runs, then resolves it on the forge. A rate limit longer than INLINE_WAIT
# is waited out by queueing the next run for its end, up to MAX_WAIT seconds in all.
PORTAL_FORGE_JOB_LEASE = float(os.environ.get("PORTAL_FORGE_JOB_LEASE", "300"))
PORTAL_FORGE_RECONCILE_INTERVAL = float(os.environ.get("PORTAL_FORGE_RECONCILE_INTERVAL", "120"))
PORTAL_FORGE_JOB_ATTEMPTS = int(os.environ.get("PORTAL_FORGE_JOB_ATTEMPTS", "5"))
PORTAL_FORGE_JOB_INLINE_WAIT = float(os.environ.get("PORTAL_FORGE_JOB_INLINE_WAIT", "10"))
PORTAL_FORGE_JOB_MAX_WAIT = float(os.environ.get("PORTAL_FORGE_JOB_MAX_WAIT", "3600"))


def periodic(task: str, seconds: float) -> dict:
    return {"task": task, "schedule": float(seconds), "options": {"expires": float(seconds) * PERIODIC_EXPIRY}}


CELERY_BEAT_SCHEDULE = {
    "poll-all-clusters": periodic("gitops.poll_all", PORTAL_POLL_INTERVAL),
    "refresh-sync-windows": periodic("gitops.refresh_sync_windows", 60),
    "mark-silent-agents": periodic("gitops.mark_silent_agents", PORTAL_POLL_INTERVAL),
    "send-notifications": periodic("notifications.send_due", 60),
    "track-pull-requests": periodic("delivery.track_pull_requests", 1800),
    # Renovate's, Dependabot's and people's PRs found before anyone clicks: one listing per repository.
    "scan-outside-prs": periodic("delivery.scan_outside_prs", 1800),
    # Upstream releases change slowly and registries rate-limit: hourly by default.
    "poll-registries": periodic(
        "releases.poll_all_registries", float(os.environ.get("PORTAL_REGISTRY_POLL_INTERVAL", "3600"))
    ),
    # SBOMs of running and newest releases, then their packages against OSV (registry queue).
    "read-supply-chain": periodic(
        "releases.read_all_supply_chain", float(os.environ.get("PORTAL_SUPPLY_CHAIN_INTERVAL", "21600"))
    ),
    "refresh-kev": periodic("releases.refresh_kev", 86400),  # CISA publishes the catalogue daily at most
    **({"refresh-osv-offline": periodic("releases.refresh_osv_offline", PORTAL_OSV_OFFLINE_REFRESH_HOURS * 3600)}
       if PORTAL_OSV_OFFLINE else {}),
    # Each repository's Git pins are read at most every 10 minutes; this only finds the due ones.
    "read-git-pins": periodic("delivery.read_due_git_pins", 60),
    # The raw-Secret findings follow the plain Secrets those reads found (a query or two).
    "sync-git-findings": periodic("findings.sync_git", 60),
    # The matrix's read model is kept by every write; this only mends what no writer announced.
    "refresh-placements": periodic("delivery.refresh_placements", 3600),
    # Pull requests still `opening` past their lease (a worker died): resumed or resolved on the forge.
    "reconcile-pull-requests": periodic("delivery.reconcile_pull_requests", PORTAL_FORGE_RECONCILE_INTERVAL),
    "open-automatic-prs": periodic(
        "delivery.open_automatic_prs", float(os.environ.get("PORTAL_AUTO_PR_INTERVAL", "1800"))
    ),
    # Release-note summaries: hourly finds the upgrades not asked today; each is asked once a day.
    "summarise-release-notes": periodic("delivery.summarise_release_notes", 3600),
    # Merged PRs -> running in production (running_at), "merged, not deployed", rollback offers.
    "track-deployments": periodic(
        "delivery.track_deployments", float(os.environ.get("PORTAL_DELIVERY_TRACK_INTERVAL", "300"))
    ),
}

# --- REST framework ---------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_AUTHENTICATION_CLASSES": ["rest_framework.authentication.SessionAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
}
PORTAL_API_RATE = os.environ.get("PORTAL_API_RATE", "600/minute")  # per API token (per user for sessions)
SPECTACULAR_SETTINGS = {
    "TITLE": "GitOps portal API",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_SETTINGS": {"docExpansion": "full", "defaultModelsExpandDepth": 2, "defaultModelExpandDepth": 2},
    # Several fields are named `kind` (a pull request's, an app's, a window's): each set its own name.
    "ENUM_NAME_OVERRIDES": {
        "PullRequestKindEnum": "portal.api.serializers.pull_request_serializers.PULL_REQUEST_KINDS",
    },
}

# The console's format: "plain" (a person at a terminal, the embedded run's default) or "json"
# (one object per line for a log pipeline; the chart sets it). Either way each line carries the
# request id (X-Request-ID) or the Celery task's id and name, and is redacted (portal/logformat.py).
PORTAL_LOG_FORMAT = os.environ.get("PORTAL_LOG_FORMAT", "plain").strip().lower()
if PORTAL_LOG_FORMAT not in {"plain", "json"}:
    raise ImproperlyConfigured(f"PORTAL_LOG_FORMAT must be plain or json, not {PORTAL_LOG_FORMAT!r}")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"context": {"()": "portal.requestids.ContextFilter"}},
    "formatters": {
        "plain": {"()": "portal.logformat.PlainFormatter"},
        "json": {"()": "portal.logformat.JsonFormatter"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": PORTAL_LOG_FORMAT, "filters": ["context"]}
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # The development server's access lines (make run) pass the one redaction like every other.
    "loggers": {"django.db.backends": {"level": "WARNING"}, "django.server": {"propagate": True, "handlers": []}},
}


# Secrets whose *variable name* is configuration (a cluster's token_env, the variables
# PORTAL_REGISTRY_AUTH names, PORTAL_LLM_API_KEY_ENV, an agent's --token-env) are read when
# used, so a rotated secret is picked up without a restart. This is the one function that reads
# them; portal.kernel.credentials is how every layer asks for one.
def _read_named_secret(name: str) -> str:
    return os.environ.get(name, "") if name else ""


PORTAL_NAMED_SECRET = _read_named_secret


# What the Kubernetes client's in-cluster loader needs to find the API server (read when a
# source is built, as the loader itself would).
def _in_cluster_environment() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name.startswith("KUBERNETES_SERVICE_")}


PORTAL_IN_CLUSTER_ENVIRONMENT = _in_cluster_environment


# The environment a helper process (the demo forge's git) inherits.
def _child_process_environment() -> dict[str, str]:
    return dict(os.environ)


PORTAL_CHILD_PROCESS_ENVIRONMENT = _child_process_environment
