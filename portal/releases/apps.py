from django.apps import AppConfig


class ReleasesConfig(AppConfig):
    name = "portal.releases"
    label = "releases"
    verbose_name = "Releases"
