"""The chart's sign-in values (values.oidc) become the settings portal/settings.py reads, the
client secret stays in the existing Secret, and values that would leave nobody able to sign in
are refused before anything is installed."""

from __future__ import annotations

import pytest

from tests.deploy.test_helm_chart import full_values, helm, render


def config_data(values: dict | None) -> dict[str, str]:
    (config,) = [
        doc for doc in render(values) if doc["kind"] == "ConfigMap" and doc["metadata"]["name"].endswith("-config")
    ]
    return config["data"]


def sign_in_settings(data: dict[str, str]) -> dict[str, str]:
    return {key: value for key, value in data.items() if key.startswith(("PORTAL_OIDC_", "PORTAL_LOCAL_LOGIN"))}


def test_by_default_local_accounts_only():
    assert sign_in_settings(config_data(None)) == {"PORTAL_LOCAL_LOGIN": "1"}


def test_full_values_sign_in_through_the_provider_only():
    assert sign_in_settings(config_data(full_values())) == {
        "PORTAL_LOCAL_LOGIN": "0",
        "PORTAL_OIDC_ISSUER": "https://dex.example.com",
        "PORTAL_OIDC_CLIENT_ID": "gitops-portal",
        "PORTAL_OIDC_NAME": "Dex",
        "PORTAL_OIDC_SCOPES": "openid email profile groups",
        "PORTAL_OIDC_GROUPS_CLAIM": "groups",
        "PORTAL_OIDC_ADMIN_GROUPS": "platform-admins",
        "PORTAL_OIDC_MEMBER_GROUPS": "payments-devs,checkout-devs",
        "PORTAL_OIDC_VIEWER_GROUPS": "engineering",
    }


def test_changing_the_sign_in_values_restarts_the_pods():
    def checksums(values: dict | None) -> set[str]:
        return {
            doc["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
            for doc in render(values)
            if doc["kind"] == "Deployment" and not doc["metadata"]["name"].endswith("agent")
        }

    assert checksums(None) != checksums({"oidc": {"issuer": "https://idp.example.com", "clientId": "portal"}})


@pytest.mark.parametrize(
    "values",
    [
        {"oidc": {"localLogin": False}},  # no way in at all
        {"oidc": {"issuer": "https://idp.example.com"}},  # no client id
        {"oidc": {"issuer": "idp.example.com", "clientId": "portal"}},  # not a URL
        {"oidc": {"adminGroups": ["ops,dev"]}},  # the setting is a comma list
        {"oidc": {"scopes": "email groups", "issuer": "https://idp.example.com", "clientId": "portal"}},
        {"config": {"PORTAL_OIDC_CLIENT_SECRET": "in-values"}},  # secrets live in the existing Secret
        {"config": {"PORTAL_OIDC_ISSUER": "https://idp.example.com"}},  # set through oidc:, once
    ],
)
def test_values_that_cannot_work_are_refused(values):
    with pytest.raises(helm.HelmValuesError):
        render(values)
