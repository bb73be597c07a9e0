from django.apps import AppConfig


class FakeOidcProviderConfig(AppConfig):
    name = "tests.fakes.oidc_provider"
    label = "fake_oidc_provider"
