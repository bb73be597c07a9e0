"""Settings of the test identity provider: django-oidc-provider in a Django project of its own,
run as its own process (tests/fakes/oidc_provider/__init__.py starts it). Not the portal's
settings: this process knows nothing of the portal but its client registration."""

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
SECRET_KEY = "test-identity-provider-only"  # noqa: S105 - a throwaway test server
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "oidc_provider",
    "tests.fakes.oidc_provider",  # its seed_provider command
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "tests.fakes.oidc_provider.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [HERE / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
            ]
        },
    }
]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["FAKE_OIDC_DATABASE"]}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
# Its users' passwords are test constants: a fast hash, so that a sign-in at this provider does
# not cost the busy suite a quarter second of PBKDF2 (the portal's own hashing is not under test).
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
LOGIN_URL = "/login/"
# The browser holds this provider's cookies beside the portal's on the same host name: own names.
SESSION_COOKIE_NAME = "provider_sessionid"
CSRF_COOKIE_NAME = "provider_csrftoken"

SITE_URL = os.environ["FAKE_OIDC_SITE_URL"]  # the issuer is SITE_URL + /openid
OIDC_EXTRA_SCOPE_CLAIMS = "tests.fakes.oidc_provider.claims.GroupsScopeClaims"
OIDC_IDTOKEN_PROCESSING_HOOK = "tests.fakes.oidc_provider.claims.groups_in_id_token"
# Off: the groups come only from the userinfo endpoint, as some providers send them.
FAKE_OIDC_GROUPS_IN_ID_TOKEN = os.environ.get("FAKE_OIDC_GROUPS_IN_ID_TOKEN", "1") == "1"
