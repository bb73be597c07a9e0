"""Image tags read as versions: which tags are versions, how they sort, how big a move is.
Pure: no I/O. The policy that picks the next version is portal.delivery.version_policy.

Tags follow Renovate's docker conventions (its docs, "Docker versioning"):

- a version is 1 to 6 dot-separated numbers, optionally after `v`: `17`, `1.25`, `v1.4.2`;
- text after the first hyphen is a *compatibility suffix* (`1.25.3-alpine`), and a tag
  only moves within its family: the same suffix and the same precision (number of
  parts), so `1.25.3-alpine` goes to `1.26.0-alpine`, never to `1.26.0` or `1.26`;
- unlike Renovate's docker scheme, a hyphenated pre-release keyword is read as a
  pre-release, as semver tags mean it (`1.5.0-rc.1`, `2.0.0-beta`, `1.5.0-rc.1-alpine`);
  attached keywords work too (`3.13.0rc2`);
- anything else is not a version and is ignored: `latest`, `main`, `sha-1a2b3c4`, `4f3a2b1`.

The `v` is not part of the family: `v1.4.2` may move to `1.5.0` when a project drops the
prefix, but when both spellings exist the current one's wins.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

MAX_PARTS = 6
LEVELS = ("patch", "minor", "major")  # smallest jump first

_TAG = re.compile(
    r"^(?P<prefix>[vV])?(?P<release>\d+(?:\.\d+){0,5})(?P<attached>(?:a|b|rc|alpha|beta|dev|pre)\d*)?"
    r"(?:-(?P<rest>[A-Za-z0-9][A-Za-z0-9._-]*))?$"
)
# A pre-release keyword right after the hyphen, then optionally `-suffix`.
_PRE = re.compile(
    r"^(?P<pre>(?P<word>alpha|beta|rc|pre|preview|dev|snapshot|a|b)(?:[.]?(?P<num>\d+(?:\.\d+)*))?)(?:-(?P<suffix>.+))?$",
    re.IGNORECASE,
)
_PRE_RANK = {"dev": 0, "snapshot": 0, "a": 1, "alpha": 1, "b": 2, "beta": 2, "pre": 3, "preview": 3, "rc": 4}
_ATTACHED = re.compile(r"^(?P<word>[a-z]+)(?P<num>\d*)$")


@dataclass(frozen=True)
class Version:
    tag: str
    release: tuple[int, ...]
    prerelease: str  # "" for a release; "rc.1", "beta", "rc2" as written
    suffix: str  # compatibility suffix ("alpine", "slim-bookworm"), "" when none
    prefixed: bool  # written with a leading `v`

    @property
    def precision(self) -> int:
        return len(self.release)

    @property
    def family(self) -> tuple[str, int]:
        """Tags that may replace each other: same suffix, same precision."""
        return (self.suffix, self.precision)

    @property
    def is_prerelease(self) -> bool:
        return bool(self.prerelease)

    @property
    def key(self) -> tuple:
        """Sort key: numbers (zero-padded), then a release after any of its pre-releases."""
        return _sort_key(self.release, self.prerelease)

    @property
    def text(self) -> str:
        """The version without prefix or suffix: `1.5.0-rc.1` for `v1.5.0-rc.1-alpine`."""
        numbers = ".".join(map(str, self.release))
        return f"{numbers}-{self.prerelease}" if self.prerelease else numbers


# Pages read the same few thousand tags again and again (every matrix line, every release a
# policy weighs); a Version is immutable, so each tag is parsed once per process. Bounded:
# tags come from registries and clusters.
TAGS_REMEMBERED = 65_536


@lru_cache(maxsize=TAGS_REMEMBERED)
def _sort_key(release: tuple[int, ...], prerelease: str) -> tuple:
    padded = release + (0,) * (MAX_PARTS - len(release))
    return (padded, prerelease_key(prerelease))


@lru_cache(maxsize=TAGS_REMEMBERED)
def parse_tag(tag: str) -> Version | None:
    """The tag as a version, or None when it is not one (`latest`, `main`, `sha-…`)."""
    match = _TAG.match(tag or "")
    if match is None:
        return None
    release = tuple(int(part) for part in match["release"].split("."))
    prerelease = match["attached"] or ""
    suffix = match["rest"] or ""
    if suffix and not prerelease:
        pre = _PRE.match(suffix)
        if pre is not None:
            prerelease, suffix = pre["pre"], pre["suffix"] or ""
    return Version(tag=tag, release=release, prerelease=prerelease, suffix=suffix, prefixed=bool(match["prefix"]))


def prerelease_key(prerelease: str) -> tuple:
    if not prerelease:
        return (1,)
    identifiers: list[tuple] = []
    for part in re.split(r"[.-]", prerelease.lower()):
        attached = _ATTACHED.match(part)
        if part.isdigit():
            identifiers.append((0, int(part), ""))
        elif attached is not None and attached["word"] in _PRE_RANK:
            identifiers.append((1, _PRE_RANK[attached["word"]], ""))
            if attached["num"]:
                identifiers.append((0, int(attached["num"]), ""))
        else:
            identifiers.append((2, 0, part))
    return (0, *identifiers)


def sort_tags(tags: Iterable[str]) -> list[str]:
    """Version tags, oldest first; non-version tags are dropped."""
    parsed = [v for v in (parse_tag(t) for t in tags) if v is not None]
    return [v.tag for v in sorted(parsed, key=lambda v: (v.key, v.suffix, v.prefixed, v.tag))]


def jump(current: str, candidate: str) -> str | None:
    """How big a move from `current` to `candidate` is: "major", "minor", "patch", or None
    when either is not a version or they are the same version. A change of pre-release
    only (`2.0.0-rc.1` -> `2.0.0`) counts as a patch."""
    a, b = parse_tag(current), parse_tag(candidate)
    if a is None or b is None or a.key == b.key:
        return None
    pad_a, pad_b = a.key[0], b.key[0]
    if pad_a[0] != pad_b[0]:
        return "major"
    if pad_a[1] != pad_b[1]:
        return "minor"
    return "patch"
