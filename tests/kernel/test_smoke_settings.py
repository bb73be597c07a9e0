from django.conf import settings


def test_embedded_defaults_need_no_server():
    assert settings.CELERY_BROKER_URL
