from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "portal.kernel.accounts"
    label = "accounts"
