"""The Django project: settings, URLs, the Celery app, and the kernel apps."""

from portal.celery import app as celery_app

__all__ = ["celery_app"]
