from django.apps import AppConfig


class ForgesConfig(AppConfig):
    name = "forges"
    verbose_name = "Forges (Git hosts)"
