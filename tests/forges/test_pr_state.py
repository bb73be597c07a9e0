"""Asking a forge what state one pull request is in, against each forge's fake over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from forges.forge import CLOSED, FAIL, MERGED, NONE, OPEN, PASS, NotFound
from forges.pr_state import pull_request_state
from tests.fakes.forges.harness import KINDS, Harness, running, set_checks

AT = datetime(2026, 1, 6, 12, 0, tzinfo=UTC)


@pytest.fixture(params=KINDS)
def forge(request: pytest.FixtureRequest) -> Iterator[Harness]:
    with running(request.param) as harness:
        harness.model.branches["feature"] = harness.model.branches["main"]
        yield harness


def test_an_open_pull_request_and_its_checks(forge: Harness) -> None:
    pull = forge.model.add_pull("Update checkout to 1.7.0 in prod", "feature")

    before = pull_request_state(forge.forge, pull.number)
    set_checks(forge, forge.model.branches["feature"], "fail")
    after = pull_request_state(forge.forge, pull.number)

    assert (before.state, before.checks, before.title, before.number) == (OPEN, NONE, pull.title, pull.number)
    assert before.url.endswith(str(pull.number)) and before.merged_at is None
    assert after.checks == FAIL


def test_merged_and_closed_read_the_same_on_every_forge(forge: Harness) -> None:
    merged = forge.model.add_pull("merged one", "feature")
    merged.state, merged.merged_at, merged.closed_at = "closed", AT, AT
    forge.model.branches["other"] = forge.model.branches["main"]
    closed = forge.model.add_pull("closed one", "other")
    closed.state, closed.closed_at = "closed", AT
    set_checks(forge, forge.model.branches["feature"], "pass")

    was_merged = pull_request_state(forge.forge, merged.number)
    was_closed = pull_request_state(forge.forge, closed.number)

    assert (was_merged.state, was_merged.merged_at, was_merged.checks) == (MERGED, AT, PASS)
    assert (was_closed.state, was_closed.closed_at, was_closed.merged_at) == (CLOSED, AT, None)


def test_an_unknown_pull_request_is_not_found(forge: Harness) -> None:
    with pytest.raises(NotFound):
        pull_request_state(forge.forge, 999)
