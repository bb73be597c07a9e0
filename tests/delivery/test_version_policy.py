"""Tags as versions and the version policy: pure, table-driven."""

from __future__ import annotations

import re
from datetime import date

import pytest

from portal.delivery.version_policy import (
    PolicyError,
    PutOff,
    VersionPolicy,
    acceptable,
    newest_acceptable,
    parse_range,
)
from portal.releases.versions import jump, parse_tag, sort_tags

TODAY = date(2025, 6, 1)


@pytest.mark.parametrize(
    ("tag", "release", "prerelease", "suffix", "prefixed"),
    [
        ("1.4.2", (1, 4, 2), "", "", False),
        ("v1.4.2", (1, 4, 2), "", "", True),
        ("17", (17,), "", "", False),
        ("1.25", (1, 25), "", "", False),
        ("1.25.3-alpine", (1, 25, 3), "", "alpine", False),
        ("3.12.1-slim-bookworm", (3, 12, 1), "", "slim-bookworm", False),
        ("1.25-alpine3.19", (1, 25), "", "alpine3.19", False),
        ("1.5.0-rc.1", (1, 5, 0), "rc.1", "", False),
        ("v2.0.0-beta", (2, 0, 0), "beta", "", True),
        ("2.0.0-beta.2-alpine", (2, 0, 0), "beta.2", "alpine", False),
        ("3.13.0rc2", (3, 13, 0), "rc2", "", False),
        ("1.2-bookworm", (1, 2), "", "bookworm", False),
        ("2024.10.1", (2024, 10, 1), "", "", False),
    ],
)
def test_version_tags_parse(tag: str, release: tuple, prerelease: str, suffix: str, prefixed: bool) -> None:
    version = parse_tag(tag)
    assert version is not None
    assert (version.release, version.prerelease, version.suffix, version.prefixed) == (
        release,
        prerelease,
        suffix,
        prefixed,
    )


@pytest.mark.parametrize(
    "tag",
    ["latest", "main", "stable", "sha-4f3a2b1", "4f3a2b1", "", "v", "1.2.3_build", "1..2", "-1.2", "1.2.3.4.5.6.7"],
)
def test_other_tags_are_not_versions(tag: str) -> None:
    assert parse_tag(tag) is None


def test_sorting_is_by_version_not_text() -> None:
    tags = ["1.10.0", "latest", "1.9.0", "1.10.0-rc.2", "1.10.0-rc.10", "1.10.0-beta", "v1.2.0", "1.10.0-alpha.1", "2"]
    assert sort_tags(tags) == [
        "v1.2.0",
        "1.9.0",
        "1.10.0-alpha.1",
        "1.10.0-beta",
        "1.10.0-rc.2",
        "1.10.0-rc.10",
        "1.10.0",
        "2",
    ]


def test_attached_and_dotted_pre_releases_order_the_same() -> None:
    assert sort_tags(["3.13.0", "3.13.0rc2", "3.13.0b1", "3.13.0a4"]) == ["3.13.0a4", "3.13.0b1", "3.13.0rc2", "3.13.0"]
    assert parse_tag("1.0.0-rc2").key == parse_tag("1.0.0-rc.2").key  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("current", "candidate", "level"),
    [
        ("1.4.2", "1.4.3", "patch"),
        ("1.4.2", "1.5.0", "minor"),
        ("1.4.2", "2.0.0", "major"),
        ("v1.4.2", "1.4.3", "patch"),
        ("1.25", "1.26", "minor"),
        ("17", "18", "major"),
        ("1.25.3-alpine", "1.25.4-alpine", "patch"),
        ("2.0.0-rc.1", "2.0.0", "patch"),
        ("1.2.3.4", "1.2.3.5", "patch"),
        ("1.5.0", "1.4.9", "minor"),  # a rollback has a size too
        ("1.4.2", "v1.4.2", None),
        ("1.4.2", "1.4.2", None),
        ("latest", "1.4.2", None),
        ("1.4.2", "main", None),
    ],
)
def test_jump(current: str, candidate: str, level: str | None) -> None:
    assert jump(current, candidate) == level


TAGS = [
    "1.4.2",
    "1.4.3",
    "1.4.10",
    "1.5.0-rc.1",
    "1.5.0",
    "1.5.1",
    "2.0.0-beta",
    "2.0.0",
    "2.1.0",
    "v2.2.0",
    "1.4.3-alpine",
    "1.5.1-alpine",
    "2.1.0-alpine",
    "1.4",
    "1.5",
    "2.1",
    "latest",
    "sha-4f3a2b1",
    "main",
]


@pytest.mark.parametrize(
    ("current", "policy", "newest"),
    [
        # accept levels
        ("1.4.2", {}, "v2.2.0"),
        ("1.4.2", {"accept": "major"}, "v2.2.0"),
        ("1.4.2", {"accept": "minor"}, "1.5.1"),
        ("1.4.2", {"accept": "patch"}, "1.4.10"),
        ("v2.2.0", {}, None),
        # suffix family and precision are kept
        ("1.4.3-alpine", {}, "2.1.0-alpine"),
        ("1.4.3-alpine", {"accept": "minor"}, "1.5.1-alpine"),
        ("1.4", {}, "2.1"),
        ("1.4", {"accept": "minor"}, "1.5"),
        # pre-releases
        ("1.4.2", {"accept": "minor", "range": "<1.5.1"}, "1.5.0"),
        ("1.4.10", {"accept": "minor", "range": "<1.5.0"}, None),
        ("1.5.0-rc.1", {"range": "<1.5.1"}, "1.5.0"),
        ("1.4.2", {"ignore_prereleases": False, "range": "<2"}, "1.5.1"),
        ("1.4.2", {"ignore_prereleases": False, "range": "<2.0.0-rc"}, "2.0.0-beta"),
        ("1.4.2", {"ignore_prereleases": True, "range": "<2.0.0-rc"}, "1.5.1"),
        ("1.9.9", {"ignore_prereleases": True}, "v2.2.0"),
        # ranges
        ("1.4.2", {"range": ">=1.4 <2"}, "1.5.1"),
        ("1.4.2", {"range": ">= 1.4, < 2"}, "1.5.1"),
        ("1.4.2", {"range": "^1.4.2"}, "1.5.1"),
        ("1.4.2", {"range": "~1.4.2"}, "1.4.10"),
        ("1.4.2", {"range": "1.4.x"}, "1.4.10"),
        ("1.4.2", {"range": "1.5"}, "1.5.1"),
        ("1.4.2", {"range": "=2.0.0"}, "2.0.0"),
        ("1.4.2", {"range": "<=2.1"}, "2.1.0"),
        ("1.4.2", {"range": "<=2.0.0"}, "2.0.0"),
        ("1.4.2", {"range": ">2.0.0"}, "v2.2.0"),
        ("1.4.2", {"range": ">2.0"}, "v2.2.0"),
        ("1.4.2", {"range": ">2.1 <3"}, "v2.2.0"),
        ("1.4.2", {"range": "1.4.3 || 2.0.0"}, "2.0.0"),
        ("1.4.2", {"range": "*"}, "v2.2.0"),
        ("1.4.2", {"range": ">=3"}, None),
        # allow-tags regex (searched, as argocd-image-updater's allowTags)
        ("1.4.2", {"allow_tags": r"^1\.4\."}, "1.4.10"),
        ("1.4.2", {"allow_tags": r"^\d+\.\d+\.\d+$"}, "2.1.0"),
        ("1.4.2", {"allow_tags": "5"}, "1.5.1"),
        # put off until a date
        ("1.4.2", {"put_off": [{"version": "2", "until": "2025-07-01"}]}, "1.5.1"),
        ("1.4.2", {"put_off": [{"version": "2", "until": "2025-06-01"}]}, "v2.2.0"),
        ("1.4.2", {"put_off": [{"version": "2.2.0", "until": "2025-07-01"}]}, "2.1.0"),
        ("1.4.2", {"accept": "minor", "put_off": [["1.5", "2025-06-02"]]}, "1.4.10"),
        ("1.4.2", {"accept": "minor", "put_off": [{"version": "1.5.1", "until": "2026-01-01"}]}, "1.5.0"),
        ("1.4", {"accept": "minor", "put_off": [{"version": "1.5.0", "until": "2026-01-01"}]}, None),
        # combined
        (
            "1.4.2",
            {"accept": "minor", "range": ">=1.4.3", "allow_tags": "^1", "put_off": [["1.5.1", "2030-01-01"]]},
            "1.5.0",
        ),
        # nothing to judge
        ("latest", {}, None),
        ("sha-4f3a2b1", {}, None),
    ],
)
def test_newest_acceptable(current: str, policy: dict, newest: str | None) -> None:
    assert newest_acceptable(current, TAGS, VersionPolicy.from_dict(policy), TODAY) == newest


def test_the_current_spelling_wins_when_a_version_is_tagged_twice() -> None:
    tags = ["v1.5.0", "1.5.0", "1.4.0"]
    assert newest_acceptable("1.4.0", tags, VersionPolicy(), TODAY) == "1.5.0"
    assert newest_acceptable("v1.4.0", tags, VersionPolicy(), TODAY) == "v1.5.0"
    # A project that dropped its `v` is still followed.
    assert newest_acceptable("v1.4.0", ["1.5.0"], VersionPolicy(), TODAY) == "1.5.0"


def test_acceptable_lists_every_candidate_oldest_first() -> None:
    policy = VersionPolicy(accept="minor")
    assert acceptable("1.4.2", TAGS, policy, TODAY) == ["1.4.3", "1.4.10", "1.5.0", "1.5.1"]


@pytest.mark.parametrize(
    ("until", "today", "covered"),
    [(date(2025, 7, 1), date(2025, 6, 30), True), (date(2025, 7, 1), date(2025, 7, 1), False)],
)
def test_put_off_ends_on_its_day(until: date, today: date, covered: bool) -> None:
    assert PutOff("2.0.0", until).covers(parse_tag("2.0.0-alpine"), today) is covered  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("environment", "level", "allowed"),
    [
        ("dev", "patch", True),
        ("dev", "minor", True),
        ("dev", "major", False),
        ("staging", "patch", True),
        ("staging", "minor", False),
        ("prod", "patch", False),
        ("qa", "patch", False),
        ("dev", None, False),
    ],
)
def test_automatic_prs_per_environment(environment: str, level: str | None, allowed: bool) -> None:
    policy = VersionPolicy.from_dict({"auto_pr": {"dev": "minor", "staging": "patch", "prod": "none"}})
    assert policy.auto_pr_allowed(environment, level) is allowed


def test_policy_round_trips_through_json() -> None:
    data = {
        "accept": "minor",
        "range": ">=1.4 <2",
        "allow_tags": ["^1\\."],
        "ignore_tags": ["-debug$", "^1\\.4\\.9$"],
        "ignore_prereleases": False,
        "auto_pr": {"dev": "minor"},
        "pr_reviewers": ["alice", "@acme-shop/platform"],
        "pr_labels": ["deps"],
        "put_off": [{"version": "1.5.0", "until": "2025-07-01"}],
    }
    policy = VersionPolicy.from_dict(data)
    assert policy.to_dict() == data
    assert policy.put_off == (PutOff("1.5.0", date(2025, 7, 1)),)
    assert policy.reviewers == ("alice", "@acme-shop/platform") and policy.labels == ("deps",)


def test_the_older_key_names_are_still_read() -> None:
    """Policies stored before `pr_reviewers` / `pr_labels` keep working; a single regex string
    for allow_tags reads as a list of one."""
    policy = VersionPolicy.from_dict({"reviewers": ["alice"], "labels": ["deps"], "allow_tags": "^1\\."})
    assert policy.reviewers == ("alice",) and policy.labels == ("deps",) and policy.allow_tags == ("^1\\.",)
    assert set(policy.to_dict()) >= {"pr_reviewers", "pr_labels"} and "reviewers" not in policy.to_dict()
    with pytest.raises(PolicyError, match="give pr_reviewers only"):
        VersionPolicy.from_dict({"reviewers": ["a"], "pr_reviewers": ["b"]})


def test_ignore_tags_skip_what_they_match() -> None:
    tags = ["1.4.3", "1.4.4", "1.4.5-debug", "1.5.0"]
    assert newest_acceptable("1.4.2", tags, VersionPolicy.from_dict({"ignore_tags": ["^1\\.5\\."]}), TODAY) == "1.4.4"
    both = VersionPolicy.from_dict({"allow_tags": ["^1\\.4\\."], "ignore_tags": ["-debug$", "\\.4$"]})
    assert newest_acceptable("1.4.2", tags, both, TODAY) == "1.4.3"
    either = VersionPolicy.from_dict({"allow_tags": ["^1\\.4\\.3$", "^1\\.5"]})
    assert acceptable("1.4.2", tags, either, TODAY) == ["1.4.3", "1.5.0"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"accept": "everything"}, "accept must be one of"),
        ({"auto_pr": {"dev": "all"}}, "automatic PR level for 'dev'"),
        ({"range": ">=1.4 <two"}, "'<two' in range"),
        ({"range": "<*"}, "compares with a wildcard"),
        ({"range": "1 || "}, "empty alternative"),
        ({"range": ">=1.4-rc.1"}, "a pre-release needs a full version"),
        ({"allow_tags": "^(1"}, "allow_tags: '^(1' is not a valid regular expression"),
        ({"ignore_tags": ["ok", "[z-a]"]}, "ignore_tags: '[z-a]' is not a valid regular expression"),
        ({"pr_reviewers": ["team:platform"]}, "neither a login nor a team as @org/team"),
        ({"pr_reviewers": "alice bob"}, "neither a login nor a team"),
        ({"pr_labels": ["x" * 51]}, "must be 1 to 50 characters"),
        ({"pr_labels": [3]}, "pr_labels is a list of strings"),
        ({"auto_pr": ["dev"]}, "auto_pr maps environments"),
        ({"ignore_prereleases": "no"}, "ignore_prereleases is true or false"),
        ({"put_off": [{"version": "1.5.0"}]}, "put_off entries are"),
        ({"put_off": [{"version": "1.5.0", "until": "next week"}]}, "put_off entries are"),
        ({"acept": "minor"}, "unknown policy keys: acept"),
    ],
)
def test_invalid_policies_are_refused(data: dict, message: str) -> None:
    with pytest.raises(PolicyError, match=re.escape(message)):
        VersionPolicy.from_dict(data)


@pytest.mark.parametrize(
    ("text", "inside", "outside"),
    [
        ("^0.2.3", ["0.2.3", "0.2.9"], ["0.3.0", "0.2.2"]),
        ("^0.0.3", ["0.0.3"], ["0.0.4"]),
        ("~1", ["1.0.0", "1.9.9"], ["2.0.0"]),
        ("<2", ["1.99.0"], ["2.0.0-rc.1", "2.0.0"]),
        (">=1.4.0-rc.1", ["1.4.0-rc.1", "1.4.0-rc.2", "1.4.0"], ["1.4.0-beta", "1.3.9"]),
    ],
)
def test_range_edges(text: str, inside: list[str], outside: list[str]) -> None:
    parsed = parse_range(text)
    assert all(parsed.contains(parse_tag(v)) for v in inside)  # type: ignore[arg-type]
    assert not any(parsed.contains(parse_tag(v)) for v in outside)  # type: ignore[arg-type]


def test_a_running_pre_release_moves_on_its_own_line_only() -> None:
    tags = ["1.5.0-rc.1", "1.5.0-rc.2", "1.6.0-rc.1", "1.4.9"]
    assert newest_acceptable("1.5.0-rc.1", tags, VersionPolicy(), TODAY) == "1.5.0-rc.2"
    assert newest_acceptable("1.5.0-rc.1", [*tags, "1.5.0"], VersionPolicy(), TODAY) == "1.5.0"
