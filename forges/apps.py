"""The forges app: Git host clients only. It has no models any more (the portal's pull requests
are portal.delivery's, on the same table); its migrations stay for the history they record."""

from django.apps import AppConfig


class ForgesConfig(AppConfig):
    name = "forges"
    verbose_name = "Forges (Git hosts)"
