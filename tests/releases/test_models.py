"""The version policy as admins store it: validated on clean(), defaults when none is set."""

from __future__ import annotations

from datetime import date

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError
from django.utils import timezone

from portal.delivery.models import ServicePolicy
from portal.delivery.version_policy import PutOff, VersionPolicy, newest_acceptable
from portal.kernel.catalog.models import Service
from portal.releases.models import Release


@pytest.fixture
def service(db) -> Service:
    return Service.objects.create(name="checkout", image_repository="ghcr.io/acme/checkout")


def test_a_service_without_a_row_gets_the_default_policy(service: Service) -> None:
    assert ServicePolicy.for_service(service) == VersionPolicy()


def test_the_stored_policy_is_what_the_pure_code_applies(service: Service) -> None:
    ServicePolicy.objects.create(
        service=service,
        accept="minor",
        range=">=1.4 <2",
        auto_pr={"dev": "minor", "staging": "patch"},
        reviewers=["alice"],
        labels=["deps"],
        put_off=[{"version": "1.5.1", "until": "2025-07-01"}],
    )
    policy = ServicePolicy.for_service(service)
    assert policy.put_off == (PutOff("1.5.1", date(2025, 7, 1)),)
    assert policy.auto_pr_allowed("staging", "patch") and not policy.auto_pr_allowed("staging", "minor")
    tags = ["1.4.2", "1.5.0", "1.5.1", "2.0.0"]
    assert newest_acceptable("1.4.2", tags, policy, date(2025, 6, 1)) == "1.5.0"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"range": ">=1.4 <two"}, "in range"),
        ({"allow_tags": "^(1"}, "not a valid regular expression"),
        ({"auto_pr": {"prod": "everything"}}, "automatic PR level for 'prod'"),
        ({"put_off": [{"version": "2.0.0", "until": "soon"}]}, "put_off entries are"),
    ],
)
def test_clean_refuses_a_policy_that_cannot_be_applied(service: Service, fields: dict, message: str) -> None:
    row = ServicePolicy(service=service, **fields)
    with pytest.raises(ValidationError, match=message):
        row.full_clean()


def test_a_tag_is_stored_once_per_service(service: Service) -> None:
    Release.objects.create(service=service, tag="1.4.2", version="1.4.2", seen_at=timezone.now())
    with pytest.raises(IntegrityError):
        Release.objects.create(service=service, tag="1.4.2", version="1.4.2", seen_at=timezone.now())
