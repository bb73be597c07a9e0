"""The "why won't it deploy?" command over a stored app and project."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from gitops.models import AppProject, ClusterPoll
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = StringIO()
    call_command("syncwindows", *args, stdout=out)
    return out.getvalue()


def test_explains_a_matching_deny_window_and_says_until_when(catalog):
    seed_app(catalog.prod_eu, "payments-prod", project="payments", destination_namespace="payments",
             destination_server="https://kubernetes.default.svc")
    AppProject.objects.create(cluster=catalog.prod_eu, namespace="argocd", name="payments", sync_windows=[
        {"kind": "deny", "schedule": "0 18 * * 5", "duration": "60h", "applications": ["payments-*"],
         "description": "weekend freeze"},
        {"kind": "allow", "schedule": "0 2 * * *", "duration": "1h", "applications": ["search-*"]},
    ])
    text = run("payments-prod", "--at", "2026-11-28T12:00:00+00:00")  # a Saturday, inside the freeze
    assert "weekend freeze" in text
    assert "2026-11-30 06:00" in text  # Monday 06:00 UTC: Friday 18:00 + 60 h
    assert "search-*" in text  # the allow window is listed, as not matching


def test_refuses_clearly_when_the_project_could_not_be_read(catalog):
    seed_app(catalog.prod_eu, "checkout-prod", project="shop")
    ClusterPoll.objects.create(cluster=catalog.prod_eu, unavailable={
        "argocd-projects": "sync windows unavailable: no permission to list appprojects"})
    with pytest.raises(CommandError, match="no permission to list appprojects"):
        run("checkout-prod")


def test_unknown_app_and_naive_time_are_errors(catalog):
    with pytest.raises(CommandError, match="no stored Argo CD application"):
        run("nope")
    seed_app(catalog.prod_eu, "a")
    AppProject.objects.create(cluster=catalog.prod_eu, namespace="argocd", name="default")
    with pytest.raises(CommandError, match="needs an offset"):
        run("a", "--at", "2026-11-28T12:00:00")
