"""The version policy that picks the next version of a service: the largest jump allowed, a
semver range, regex allow and ignore lists, pre-releases, versions put off (or held in one
environment after a rollback), automatic PRs per
environment, and the reviewers and labels of its pull requests. Pure: no I/O. Tags are read as
versions by portal.releases.versions.

The JSON form (`from_dict` / `to_dict`) is the one document an admin edits on the service
page, in the Django admin and in the fleet file, and the API shows. Its keys are the
documented ones (`pr_reviewers`, `pr_labels`, `auto_pr`, ...); `reviewers` and `labels`, the
names policies were first stored under, are still read so stored policies keep working."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from portal.releases.versions import LEVELS, MAX_PARTS, Version, jump, parse_tag, prerelease_key

ACCEPT_CHOICES = ("any", "major", "minor", "patch")
AUTO_PR_CHOICES = ("none", *LEVELS)
# A person (a forge login) or a team as `@org/team` (GitHub `team_reviewers`, Gitea teams).
_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]{0,98}"
_REVIEWER = re.compile(rf"^(?:{_NAME}|@{_NAME}/{_NAME})$")
MAX_LABEL = 50  # GitHub's limit on a label's name, the shortest of the three forges
KEYS = ("accept", "range", "allow_tags", "ignore_tags", "ignore_prereleases", "auto_pr", "pr_reviewers",
        "pr_labels", "put_off")
ALIASES = {"reviewers": "pr_reviewers", "labels": "pr_labels"}  # older names, still read


class PolicyError(ValueError):
    """A version policy that cannot be applied (bad level, range or regex)."""


# --- semver ranges -------------------------------------------------------------------

_COMPARATOR = re.compile(
    r"^(?P<op><=|>=|<|>|=|\^|~)?[vV]?(?P<version>(?:\d+|[xX*])(?:\.(?:\d+|[xX*])){0,5})(?:-(?P<pre>[0-9A-Za-z.]+))?$"
)
_LOWEST = (0,)  # sorts below every pre-release: "X-0" in node-semver terms


def _bound(numbers: list[int]) -> tuple:
    return tuple(numbers + [0] * (MAX_PARTS - len(numbers)))


def _bump(numbers: list[int], index: int) -> list[int]:
    return numbers[:index] + [numbers[index] + 1]


@dataclass(frozen=True)
class Range:
    """A node-semver style range: comparators separated by spaces must all hold, `||`
    separates alternatives. Partial versions mean what they mean in node-semver: `<2` is
    below 2.0.0 and all its pre-releases, `1.4` / `1.4.x` is `>=1.4.0 <1.5.0-0`,
    `^1.2.3` is `>=1.2.3 <2.0.0-0`, `~1.2.3` is `>=1.2.3 <1.3.0-0`."""

    text: str
    alternatives: tuple[tuple[tuple[str, tuple], ...], ...]

    def contains(self, version: Version) -> bool:
        key = version.key
        return any(all(_holds(op, key, bound) for op, bound in alt) for alt in self.alternatives)


def _holds(op: str, key: tuple, bound: tuple) -> bool:
    return {">=": key >= bound, ">": key > bound, "<": key < bound, "<=": key <= bound}[op]


def parse_range(text: str) -> Range:
    alternatives = []
    for alternative in text.split("||"):
        # `>= 1.4` is allowed: join an operator with the version that follows it. Commas
        # separate comparators too, as in the Masterminds constraints Flux and argocd-image-updater take.
        tokens = re.sub(r"(<=|>=|<|>|=|\^|~)\s+", r"\1", alternative.replace(",", " ").strip()).split()
        if not tokens:
            raise PolicyError(f"empty alternative in range {text!r}")
        comparators: list[tuple[str, tuple]] = []
        for token in tokens:
            comparators.extend(_comparators(token, text))
        alternatives.append(tuple(comparators))
    return Range(text=text, alternatives=tuple(alternatives))


def _comparators(token: str, text: str) -> list[tuple[str, tuple]]:
    match = _COMPARATOR.match(token)
    if match is None:
        raise PolicyError(f"{token!r} in range {text!r} is not a comparator like >=1.4, <2, ^1.2 or 1.x")
    op = match["op"] or "="
    parts = match["version"].split(".")
    wild = next((i for i, p in enumerate(parts) if p in "xX*"), len(parts))
    numbers = [int(p) for p in parts[:wild]]
    if not numbers:
        if op in ("=", ">="):  # `*`, `x`: any version
            return []
        raise PolicyError(f"{token!r} in range {text!r} compares with a wildcard")
    full = len(numbers) == len(parts) and len(numbers) >= 3
    low = (_bound(numbers), _LOWEST)
    if match["pre"]:
        if not full:
            raise PolicyError(f"{token!r} in range {text!r}: a pre-release needs a full version (1.4.0-rc.1)")
        # A bound on a pre-release is exactly that pre-release.
        low = (_bound(numbers), prerelease_key(match["pre"]))
        if op in ("=", ">=", "<", ">", "<="):
            return [(op, low)] if op != "=" else [(">=", low), ("<=", low)]
    if op == "^":
        nonzero = next((i for i, n in enumerate(numbers) if n != 0), len(numbers) - 1)
        return [(">=", low), ("<", (_bound(_bump(numbers, min(nonzero, len(numbers) - 1))), _LOWEST))]
    if op == "~":
        index = 1 if len(numbers) >= 2 else 0
        return [(">=", low), ("<", (_bound(_bump(numbers, index)), _LOWEST))]
    upper = (_bound(_bump(numbers, len(numbers) - 1)), _LOWEST)
    exact = (_bound(numbers), (1,))
    if op == "=":
        return [(">=", exact), ("<=", exact)] if full else [(">=", low), ("<", upper)]
    if op == ">=":
        return [(">=", low)]
    if op == ">":
        return [(">", exact)] if full else [(">=", upper)]
    if op == "<":
        return [("<", low)]
    return [("<=", exact)] if full else [("<", upper)]  # "<="


# --- the policy ----------------------------------------------------------------------


@dataclass(frozen=True)
class PutOff:
    """Skip `version` until `until` (from that day on it counts again). A partial version
    puts off a whole line: `2` is every 2.x, `1.5` every 1.5.x.

    An entry with an `environment` skips the version there only: a version rolled back there
    is held (`portal.delivery.holds`), with who held it, when, why and its source ("rollback PR
    #12"). A held version needs no `until`: it stays skipped until undone, and offers move past
    it on their own as soon as a newer acceptable release exists."""

    version: str
    until: date | None
    environment: str = ""
    by: str = ""
    at: datetime | None = None
    why: str = ""
    source: str = ""

    @property
    def held(self) -> bool:
        return bool(self.environment)

    def covers(self, candidate: Version, today: date, environment: str | None = None) -> bool:
        """Whether `candidate` is skipped on `today` in `environment` (None: an environment-less
        question, which a hold for one environment does not answer)."""
        if self.until is not None and today >= self.until:
            return False
        if self.environment and environment != self.environment:
            return False
        entry = parse_tag(self.version)
        if entry is None:
            return candidate.tag == self.version
        padded = candidate.release + (0,) * max(0, entry.precision - candidate.precision)
        if padded[: entry.precision] != entry.release:
            return False
        return not entry.prerelease or prerelease_key(entry.prerelease) == prerelease_key(candidate.prerelease)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"version": self.version}
        if self.until is not None:
            data["until"] = self.until.isoformat()
        optional = {"environment": self.environment, "by": self.by, "why": self.why, "source": self.source,
                    "at": self.at.isoformat() if self.at is not None else ""}
        data.update((key, value) for key, value in optional.items() if value)
        return data

    @classmethod
    def from_entry(cls, entry: Any) -> PutOff:
        """One stored entry: {"version", "until"} (or a [version, until] pair), and for a held
        version {"version", "environment", "by", "at", "why", "source"} with `until` optional."""
        try:
            if not isinstance(entry, Mapping):
                version, until = entry
                entry = {"version": version, "until": until}
            until = entry.get("until")
            environment = str(entry.get("environment") or "")
            if until is None and not environment:
                raise KeyError("until")
            at = entry.get("at")
            return cls(
                str(entry["version"]),
                None if until is None else until if isinstance(until, date) else date.fromisoformat(until),
                environment=environment,
                by=str(entry.get("by") or ""),
                at=None if not at else at if isinstance(at, datetime) else datetime.fromisoformat(at),
                why=str(entry.get("why") or ""),
                source=str(entry.get("source") or ""),
            )
        except (KeyError, TypeError, ValueError):
            raise PolicyError(f"put_off entries are {{'version': ..., 'until': 'YYYY-MM-DD'}}, not {entry!r}")


@dataclass(frozen=True)
class VersionPolicy:
    """Which newer tags a service accepts, and what the portal does about them.

    accept: the largest jump allowed ("any" = "major": no limit; "minor": stay on the
    major; "patch": stay on the minor). `range` (node-semver) and `allow_tags` (regexes,
    searched in the tag as argocd-image-updater's allowTags does: one must match) narrow it
    further; a tag matching one of `ignore_tags` is never taken (argocd-image-updater's
    ignore-tags, as regexes). auto_pr: environment name -> the largest jump that gets an
    automatic pull request ("none" or absent: never). reviewers and labels (`pr_reviewers`,
    `pr_labels` in JSON) go on every pull request for the service: people by login, teams as
    `@org/team`."""

    accept: str = "any"
    range: str = ""
    allow_tags: tuple[str, ...] = ()
    ignore_tags: tuple[str, ...] = ()
    ignore_prereleases: bool = True
    auto_pr: Mapping[str, str] = field(default_factory=dict)
    reviewers: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    put_off: tuple[PutOff, ...] = ()

    def __post_init__(self) -> None:
        if self.accept not in ACCEPT_CHOICES:
            raise PolicyError(f"accept must be one of {', '.join(ACCEPT_CHOICES)}, not {self.accept!r}")
        for env, level in self.auto_pr.items():
            if level not in AUTO_PR_CHOICES:
                raise PolicyError(f"automatic PR level for {env!r} must be one of {', '.join(AUTO_PR_CHOICES)}")
        if self.range:
            parse_range(self.range)
        for key in ("allow_tags", "ignore_tags"):
            for pattern in getattr(self, key):
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise PolicyError(f"{key}: {pattern!r} is not a valid regular expression: {exc}")
        for reviewer in self.reviewers:
            if not _REVIEWER.match(reviewer):
                raise PolicyError(f"pr_reviewers: {reviewer!r} is neither a login nor a team as @org/team")
        for label in self.labels:
            if not label.strip() or len(label) > MAX_LABEL:
                raise PolicyError(f"pr_labels: {label[:60]!r} must be 1 to {MAX_LABEL} characters")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> VersionPolicy:
        """From the JSON an admin edits; unknown keys are an error, so typos do not pass silently."""
        if data is not None and not isinstance(data, Mapping):
            raise PolicyError("a policy is a JSON object: {\"accept\": \"minor\", ...}")
        data = dict(data or {})
        for old, new in ALIASES.items():
            if old in data:
                if new in data:
                    raise PolicyError(f"give {new} only ({old} is its older name)")
                data[new] = data.pop(old)
        unknown = sorted(set(data) - set(KEYS))
        if unknown:
            raise PolicyError(f"unknown policy keys: {', '.join(unknown)}")
        put_off = [PutOff.from_entry(entry) for entry in data.get("put_off") or []]
        auto_pr = data.get("auto_pr") or {}
        if not isinstance(auto_pr, Mapping):
            raise PolicyError('auto_pr maps environments to a level: {"dev": "minor"}')
        prereleases = data.get("ignore_prereleases", True)
        if not isinstance(prereleases, bool):
            raise PolicyError("ignore_prereleases is true or false")
        return cls(
            accept=str(data.get("accept") or "any"),
            range=str(data.get("range") or "").strip(),
            allow_tags=_strings(data, "allow_tags"),
            ignore_tags=_strings(data, "ignore_tags"),
            ignore_prereleases=prereleases,
            auto_pr={str(k): str(v) for k, v in auto_pr.items()},
            reviewers=_strings(data, "pr_reviewers"),
            labels=_strings(data, "pr_labels"),
            put_off=tuple(put_off),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "accept": self.accept,
            "range": self.range,
            "allow_tags": list(self.allow_tags),
            "ignore_tags": list(self.ignore_tags),
            "ignore_prereleases": self.ignore_prereleases,
            "auto_pr": dict(self.auto_pr),
            "pr_reviewers": list(self.reviewers),
            "pr_labels": list(self.labels),
            "put_off": [p.to_dict() for p in self.put_off],
        }

    def held(self, environment: str | None = None) -> tuple[PutOff, ...]:
        """The versions held (rolled back) in `environment`, or in any environment."""
        return tuple(p for p in self.put_off if p.held and (environment is None or p.environment == environment))

    def max_jump(self) -> str:
        return "major" if self.accept == "any" else self.accept

    def auto_pr_allowed(self, environment: str, level: str | None) -> bool:
        """Does a jump of `level` get an automatic pull request in `environment`?"""
        allowed = self.auto_pr.get(environment, "none")
        if level is None or allowed == "none":
            return False
        return LEVELS.index(level) <= LEVELS.index(allowed)


def _strings(data: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """A list of strings; one string alone counts as a list of one. Blanks are dropped."""
    value = data.get(key) or ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise PolicyError(f"{key} is a list of strings, not {str(value)[:60]!r}")
    return tuple(v.strip() for v in value if v.strip())


def acceptable(current: str, tags: Iterable[str], policy: VersionPolicy, today: date,
               environment: str | None = None) -> list[str]:
    """Every tag newer than `current` that the policy accepts (in `environment`, where versions
    may be held; None: whatever the environment), oldest first."""
    now = parse_tag(current)
    if now is None:
        return []
    limit = LEVELS.index(policy.max_jump())
    semver_range = parse_range(policy.range) if policy.range else None
    allow = [re.compile(pattern) for pattern in policy.allow_tags]
    ignore = [re.compile(pattern) for pattern in policy.ignore_tags]
    found = []
    for tag in tags:
        candidate = parse_tag(tag)
        if candidate is None or candidate.family != now.family or candidate.key <= now.key:
            continue
        if candidate.is_prerelease and policy.ignore_prereleases and candidate.release != now.release:
            # A pre-release is only taken on the way to the release the service already runs a pre-release of.
            continue
        level = jump(current, tag)
        if level is None or LEVELS.index(level) > limit:
            continue
        if semver_range is not None and not semver_range.contains(candidate):
            continue
        if allow and not any(pattern.search(tag) for pattern in allow):
            continue
        if any(pattern.search(tag) for pattern in ignore):
            continue
        if any(p.covers(candidate, today, environment) for p in policy.put_off):
            continue
        found.append(candidate)
    # Same version spelled twice (`v1.5.0` and `1.5.0`): the current spelling sorts last, so it wins.
    found.sort(key=lambda v: (v.key, v.prefixed == now.prefixed, v.tag))
    return [v.tag for v in found]


def newest_acceptable(current: str, tags: Iterable[str], policy: VersionPolicy, today: date,
                      environment: str | None = None) -> str | None:
    """The newest tag the service should move to (in `environment`: see `acceptable`), or None
    when nothing newer is acceptable (or `current` is not a version: `latest`, a digest)."""
    found = acceptable(current, tags, policy, today, environment)
    return found[-1] if found else None
