import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
application = get_wsgi_application()


def freeze_startup_objects() -> None:
    """Move what start-up loaded (modules, URL patterns, settings) out of the garbage
    collector's sight. It lives as long as the process; without this every full collection
    walks it again, which showed as 50-100 ms spikes on the matrix and overview of a large
    fleet. Forked gunicorn workers also keep sharing those memory pages (see gc.freeze)."""
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - import every view now, not on the first request
    gc.collect()
    gc.freeze()


freeze_startup_objects()
